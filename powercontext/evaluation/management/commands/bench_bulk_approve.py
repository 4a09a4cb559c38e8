"""Benchmark: bulk-approve N pending Experience candidates through the Inbox's bulk view (one
POST, each candidate in its own transaction), and print the wall time and the query count.

Writes rows through the real services into scope ``bench-bulk``: use a throwaway database
(scripts/bench.sh does). Target: 100 candidates in under 5 s on SQLite.
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
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from powercontext.memory.sources import source_capture
from review import services
from review.models import Candidate

SCOPE = "bench-bulk"


class Command(BaseCommand):
    help = "Time one bulk approval of N candidates through the Review Inbox (default 100)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--count", type=int, default=100)
        parser.add_argument("--json", dest="json_path", default=None)

    def handle(self, *args: Any, count: int, json_path: str | None, **options: Any) -> None:
        user_model = get_user_model()
        reviewer, _ = user_model.objects.get_or_create(username="bench-bulk-reviewer")
        reviewer.user_permissions.add(
            Permission.objects.get(content_type__app_label="review", codename="review_candidate")
        )
        pks: list[str] = []
        for n in range(count):
            source = source_capture(
                scope_id=SCOPE, source_id=f"bulk-{time.time_ns()}-{n}", content=f"prompt {n}", metadata=None
            )
            candidate = services.candidate_propose(
                scope_id=SCOPE,
                family=Candidate.Family.EXPERIENCE,
                submission=services.Submission(
                    # Words of its own in every field: distinct lessons, none a near-duplicate
                    # of another (a bulk approval would leave those out).
                    proposal={
                        "situation": f"Bulk benchmark situation b{n}s1 b{n}s2.",
                        "action": f"Did b{n}a1 b{n}a2.",
                        "outcome": f"It b{n}o1 b{n}o2.",
                        "lesson": f"Bulk lesson b{n}l1 b{n}l2 b{n}l3.",
                    },
                    source_refs=[{"name": source.source_type, "source_id": source.source_id}],
                    artifact_refs=[],
                    target=None,
                    reason=None,
                ),
            )
            pks.append(f"{candidate.pk}:{candidate.version}")
        client = Client()
        client.force_login(user_model.objects.get(pk=reviewer.pk))
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.post(reverse("review:bulk"), {"decision": "approve", "item": pks})
            seconds = time.perf_counter() - started
        approved = Candidate.objects.filter(scope_id=SCOPE, status=Candidate.Status.APPROVED).count()
        result = {
            "vendor": connection.vendor,
            "candidates": count,
            "status": response.status_code,
            "approved": approved,
            "seconds": round(seconds, 3),
            "queries": len(captured.captured_queries),
        }
        self.stdout.write(
            f"bulk approve {count} candidates ({connection.vendor}): {seconds:.2f} s, "
            f"{result['queries']} queries, {approved} approved, HTTP {response.status_code}"
        )
        if json_path:
            with open(json_path, "w", encoding="utf-8") as handle:
                json.dump(result, handle, indent=2)
