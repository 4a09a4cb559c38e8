"""Benchmark: the Review Inbox candidate page for an update whose proposal and target differ in
maximum-length adversarial fields (the diff's worst case: long runs of repeated lines or tokens).

Writes rows through the real services into scope ``bench-review-page``: use a throwaway database
(scripts/bench.sh does). Renders the page through Django's test client and prints p50/max.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection
from django.test import Client
from django.urls import reverse

from powercontext.evaluation.bench.common import page_timings
from powercontext.memory.sources import source_capture
from review import services
from review.models import Candidate

SCOPE = "bench-review-page"
EXPERIENCE_FIELD_MAX = 8000  # context_api/review_apis.py
INSTRUCTIONS_MAX = 32000
VALIDATION_ITEM_MAX, VALIDATION_ITEMS_MAX = 2000, 32


def _repeat(unit: str, length: int) -> str:
    """``unit`` repeated to exactly ``length`` characters."""
    return (unit * (length // len(unit) + 1))[:length]


def _cases(scale: float) -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    """name -> (family, target proposal, update proposal). Each pair differs in two fields of
    maximum length (times ``scale``). experience, skill: one field a single line of repeated
    tokens, one many repeated lines; both sides share most tokens/lines, which is what makes
    SequenceMatcher cubic. rows: two fields of short lines that all change, just under the
    diff's line limit: the most table rows a page can have."""
    n = int(EXPERIENCE_FIELD_MAX * scale)
    experience = (
        {
            "situation": _repeat("a ", n),
            "action": "Same action.",
            "outcome": "Same outcome.",
            "lesson": _repeat("x\n", n).rstrip("\n"),
        },
        {
            "situation": _repeat("a b ", n),
            "action": "Same action.",
            "outcome": "Same outcome.",
            "lesson": _repeat("x\ny\n", n).rstrip("\n"),
        },
    )
    m, item = int(INSTRUCTIONS_MAX * scale), int(VALIDATION_ITEM_MAX * scale)
    skill = (
        {
            "name": "bench skill",
            "description": "Same description.",
            "instructions": _repeat("a\nb a\n", m).rstrip("\n"),
            "validation": [_repeat("a ", item).strip()] * VALIDATION_ITEMS_MAX,
        },
        {
            "name": "bench skill",
            "description": "Same description.",
            "instructions": _repeat("a b\na\n", m).rstrip("\n"),
            "validation": [_repeat("a b a ", item).strip()] * VALIDATION_ITEMS_MAX,
        },
    )
    count = int(EXPERIENCE_FIELD_MAX * scale) // 8  # "a000001\n" is 8 characters

    def lines(prefix: str) -> str:
        return "\n".join(f"{prefix}{i:06d}" for i in range(count))

    rows = (
        {"situation": lines("a"), "action": lines("c"), "outcome": "Same outcome.", "lesson": "Same lesson."},
        {"situation": lines("b"), "action": lines("d"), "outcome": "Same outcome.", "lesson": "Same lesson."},
    )
    return {
        "experience": (Candidate.Family.EXPERIENCE, *experience),
        "skill": (Candidate.Family.SKILL, *skill),
        "rows": (Candidate.Family.EXPERIENCE, *rows),
    }


def _reviewer() -> Any:
    user, _ = get_user_model().objects.get_or_create(username="bench-page-reviewer")
    user.user_permissions.add(
        Permission.objects.get(codename="review_candidate", content_type__app_label="review")
    )
    return get_user_model().objects.get(pk=user.pk)


def _update_candidate(
    family: str, target: dict[str, Any], proposal: dict[str, Any], reviewer: Any, tag: str
) -> Candidate:
    source = source_capture(scope_id=SCOPE, source_id=f"bench-{tag}", content="evidence", metadata=None)
    base = services.candidate_propose(
        scope_id=SCOPE,
        family=family,
        submission=services.Submission(
            proposal=target,
            source_refs=[{"name": source.source_type, "source_id": source.source_id}],
            artifact_refs=[],
            target=None,
            reason=None,
        ),
    )
    base = services.candidate_approve(
        scope_id=SCOPE, candidate_id=base.candidate_id, expected_version=1, reviewer=reviewer
    )
    assert base.result_head is not None
    ref = {"family": family, "artifact_id": base.result_head.artifact_id, "revision": base.result_revision}
    return services.candidate_propose(
        scope_id=SCOPE,
        family=family,
        submission=services.Submission(
            proposal=proposal, source_refs=[], artifact_refs=[ref], target=ref, reason="bench update"
        ),
    )


class Command(BaseCommand):
    help = "Time the Review Inbox candidate page of an update with maximum-length adversarial fields."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", type=int, default=5, help="timed page renders per case")
        parser.add_argument(
            "--scale", type=float, default=1.0, help="field length as a fraction of the maximum"
        )
        parser.add_argument(
            "--cases", default="experience,skill,rows", help="comma-separated: experience, skill, rows"
        )
        parser.add_argument("--json", dest="json_path", help="also write results to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        reviewer = _reviewer()
        client = Client()
        client.force_login(reviewer)
        wanted = {name.strip() for name in options["cases"].split(",") if name.strip()}
        results: dict[str, Any] = {"database": connection.vendor, "scale": options["scale"]}
        for name, (family, target, proposal) in _cases(options["scale"]).items():
            if name not in wanted:
                continue
            candidate = _update_candidate(family, target, proposal, reviewer, name)
            url = reverse("review:candidate", args=[candidate.pk])
            client.get(url)  # untimed: template loading and the first query plans
            samples = []
            for _ in range(options["runs"]):
                started = time.perf_counter()
                response = client.get(url)
                samples.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"the candidate page answered {response.status_code}")
            results[name] = page_timings(samples, len(response.content))
            self.stdout.write(
                f"review page, {name}: update with two adversarial fields (scale {options['scale']}): "
                f"p50 {results[name]['p50_ms']} ms, max {results[name]['max_ms']} ms "
                f"({len(samples)} runs, {len(response.content)} bytes)"
            )
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)
