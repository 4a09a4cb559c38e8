"""Benchmark: the Review Inbox queue (``/review/``) with thousands of pending maximum-size
Experience proposals (issue 20, N2: the near-duplicate row flags once did unbounded work).

Writes rows through the real services into scope ``bench-review-queue`` (use a throwaway
database; scripts/bench.sh does): ``--pending`` candidates whose four fields are each the maximum
8,000 characters of distinct words, plus ``--approved`` approved ones of the same size. Then
renders ``/review/`` through Django's test client from a cold process cache and prints p50/max.
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

from powercontext.evaluation.bench.common import page_timings
from powercontext.memory.sources import source_capture
from review import services
from review.models import Candidate
from review.selectors import similar

SCOPE = "bench-review-queue"
FIELD_MAX = 8000  # an Experience field's maximum length (context_api/review_apis.py)


def _field(seed: int, field: int) -> str:
    """``FIELD_MAX`` characters of words distinct per candidate and field (the most analyzer
    terms a field can hold, so every term set is as large as it gets)."""
    words: list[str] = []
    size = 0
    index = 0
    while size < FIELD_MAX:
        word = f"w{seed:05d}f{field}n{index:04d}"
        words.append(word)
        size += len(word) + 1
        index += 1
    return " ".join(words)[:FIELD_MAX]


def _proposal(seed: int) -> dict[str, str]:
    return {
        name: _field(seed, number) for number, name in enumerate(("situation", "action", "outcome", "lesson"))
    }


def _reviewer() -> Any:
    user, _ = get_user_model().objects.get_or_create(username="bench-queue-reviewer")
    user.user_permissions.add(
        Permission.objects.get(codename="review_candidate", content_type__app_label="review")
    )
    return get_user_model().objects.get(pk=user.pk)


class Command(BaseCommand):
    help = "Time /review/ with many pending maximum-size Experience proposals."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--pending", type=int, default=5000, help="pending candidates to write")
        parser.add_argument("--approved", type=int, default=200, help="approved Experiences to write")
        parser.add_argument("--runs", type=int, default=5, help="timed page renders")
        parser.add_argument("--json", dest="json_path", help="also write results to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        reviewer = _reviewer()
        source = source_capture(scope_id=SCOPE, source_id="bench-queue", content="evidence", metadata=None)
        ref = [{"name": source.source_type, "source_id": source.source_id}]
        existing = Candidate.objects.filter(scope_id=SCOPE).count()
        total = options["pending"] + options["approved"]
        for seed in range(existing, total):
            with transaction.atomic(durable=True):
                candidate = services.candidate_propose_within(
                    scope_id=SCOPE,
                    family=Candidate.Family.EXPERIENCE,
                    submission=services.Submission(
                        proposal=_proposal(seed), source_refs=ref, artifact_refs=[], target=None, reason=None
                    ),
                )
            if seed < options["approved"]:
                services.candidate_approve(
                    scope_id=SCOPE, candidate_id=candidate.candidate_id, expected_version=1, reviewer=reviewer
                )
        pending = Candidate.objects.filter(scope_id=SCOPE, status=Candidate.Status.PENDING).count()
        client = Client()
        client.force_login(reviewer)
        samples = []
        for run in range(options["runs"] + 1):
            similar.forget_digests()  # every render from a cold process cache, as a fresh worker
            started = time.perf_counter()
            response = client.get("/review/")
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"/review/ answered {response.status_code}")
            if run:  # the first render loads templates and query plans
                samples.append(elapsed)
        results = {
            "database": connection.vendor,
            "pending": pending,
            "proposal_bytes": len(json.dumps(_proposal(0))),
            **page_timings(samples, len(response.content)),
        }
        self.stdout.write(
            f"/review/ with {pending} pending maximum-size proposals ({results['proposal_bytes']} bytes each): "
            f"p50 {results['p50_ms']} ms, max {results['max_ms']} ms ({len(samples)} cold-cache runs)"
        )
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)
