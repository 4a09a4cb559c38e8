"""Benchmark: the Review Inbox's near-duplicate filter (``/review/?near=1``) with 500 pending
template-built Experience proposals (issue 32: it took 27-31 s and flagged distinct items).

Writes ``--pending`` candidates of ``powercontext/evaluation/near_template.py`` (four fields of
about 1,300 characters each, most of them one template's boilerplate; ``--copies`` of them
reworded copies of earlier ones) through the real services into scope ``bench-review-near`` (use
a throwaway database; scripts/bench.sh does), plus ``--approved`` approved ones. Then renders
``/review/?near=1`` through Django's test client and prints p50/max, and the flags' precision
and recall against the known copies.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction
from django.test import Client

from powercontext.evaluation import near_template
from powercontext.evaluation.bench.common import page_timings
from powercontext.memory.sources import source_capture
from review import services
from review.models import Candidate
from review.selectors import similar

SCOPE = "bench-review-near"


def _reviewer() -> Any:
    user, _ = get_user_model().objects.get_or_create(username="bench-near-reviewer")
    user.user_permissions.add(
        Permission.objects.get(codename="review_candidate", content_type__app_label="review")
    )
    return get_user_model().objects.get(pk=user.pk)


def _seed(items: list[near_template.Item], approved: int, reviewer: Any) -> dict[int, int]:
    """Write the corpus (the first ``approved`` approved); the corpus index of each pending pk."""
    source = source_capture(scope_id=SCOPE, source_id="bench-near", content="evidence", metadata=None)
    ref = [{"name": source.source_type, "source_id": source.source_id}]
    positions: dict[int, int] = {}
    for index, item in enumerate(items):
        with transaction.atomic(durable=True):
            candidate = services.candidate_propose_within(
                scope_id=SCOPE,
                family=Candidate.Family.EXPERIENCE,
                submission=services.Submission(
                    proposal=item.proposal, source_refs=ref, artifact_refs=[], target=None, reason=None
                ),
            )
        if index < approved:
            services.candidate_approve(
                scope_id=SCOPE, candidate_id=candidate.candidate_id, expected_version=1, reviewer=reviewer
            )
        else:
            positions[candidate.pk] = index
    return positions


class Command(BaseCommand):
    help = "Time /review/?near=1 with 500 pending template-built Experience proposals."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--pending", type=int, default=500, help="pending candidates to write")
        parser.add_argument("--copies", type=int, default=16, help="of them, copies of earlier ones")
        parser.add_argument("--approved", type=int, default=0, help="approved ones written first")
        parser.add_argument("--runs", type=int, default=5, help="timed page renders")
        parser.add_argument("--json", dest="json_path", help="also write results to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        if Candidate.objects.filter(scope_id=SCOPE).exists():
            raise SystemExit(f"scope {SCOPE} already holds candidates: use a fresh database")
        reviewer = _reviewer()
        items = near_template.corpus(size=options["approved"] + options["pending"], copies=options["copies"])
        positions = _seed(items, options["approved"], reviewer)
        client = Client()
        client.force_login(reviewer)
        samples = []
        for run in range(options["runs"] + 1):
            started = time.perf_counter()
            response = client.get("/review/?near=1")
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"/review/?near=1 answered {response.status_code}")
            if run:  # the first render loads templates and query plans
                samples.append(elapsed)
        pending = list(
            Candidate.objects.filter(scope_id=SCOPE, status=Candidate.Status.PENDING).select_related("latest")
        )
        flagged = {positions[pk] for pk, flag in similar.near_duplicate_flags(pending).items() if flag}
        copies = {index for index, item in enumerate(items) if item.copy_of is not None}
        copies -= set(range(options["approved"]))
        true = len(flagged & copies)
        results = {
            "database": connection.vendor,
            "pending": len(pending),
            "proposal_bytes": len(json.dumps(items[-1].proposal)),
            "copies": len(copies),
            "flagged": len(flagged),
            "flagged_copies": true,
            "precision": round(true / len(flagged), 3) if flagged else 1.0,
            "recall": round(true / len(copies), 3) if copies else 1.0,
            **page_timings(samples, len(response.content)),
        }
        self.stdout.write(
            f"/review/?near=1 with {results['pending']} pending template-built proposals "
            f"({results['proposal_bytes']} bytes each): p50 {results['p50_ms']} ms, max {results['max_ms']} ms "
            f"({len(samples)} runs); flagged {results['flagged']} (of them {true} of the {len(copies)} "
            f"copies): precision {results['precision']}, recall {results['recall']}"
        )
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)
