"""Benchmark: session recovery at size. One session with ``--notes`` notes (1,000) and a history of
``--sources`` captured sources (10,000), in a scope that also holds other sessions' sources
(``--noise``). Reports p50/p95 (milliseconds) of note writes (create, then append at full size)
and of the recovery hint, through the service and through the /v1 view (Django's test client, in
process: validation, authorization and rendering included), plus history list/search/read.

Writes into scope ``bench-recovery-<time>``: use a throwaway database (scripts/bench.sh does).
Notes are written through the real service; the sources are bulk-inserted rows with their
positions (the capture path is measured by ``bench``), so the setup stays short.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction
from django.test import Client

from powercontext.core.models import LOCAL_OWNER, ScopeState, Source
from powercontext.memory.sources import source_capture
from powercontext.recovery import history, selectors, services
from powercontext.recovery.text import LineSearch

SESSION = "bench-session"


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 3),
        "max_ms": round(ordered[-1] * 1000, 3),
    }


def _time(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


class Command(BaseCommand):
    help = (
        "Benchmark session recovery: note write and hint p50/p95 at 1,000 notes and a 10,000-source session."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--notes", type=int, default=1000)
        parser.add_argument("--sources", type=int, default=10_000)
        parser.add_argument("--noise", type=int, default=10_000, help="other sessions' sources in the scope")
        parser.add_argument("--appends", type=int, default=1000)
        parser.add_argument("--hints", type=int, default=200)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--heavy-sources", type=int, default=14, help="captured sources of 200 KB in a second session"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        rng = random.Random(options["seed"])
        scope = f"bench-recovery-{int(time.time())}"
        self._sources(scope, options["sources"], options["noise"], rng)
        client = Client()
        ids = {"scope_id": scope, "session_id": SESSION}

        def post(path: str, body: dict[str, Any]) -> None:
            response = client.post(path, data=json.dumps(body), content_type="application/json")
            assert response.status_code == 200, response.content

        note_count = options["notes"]

        def create_note(i: int) -> Callable[[], Any]:
            return lambda: services.note_write(
                scope_id=scope,
                session_id=SESSION,
                owner=LOCAL_OWNER,
                path=f"notes/{i:04d}.md",
                content=f"note {i}\n" + "x" * 200,
            )

        create = [_time(create_note(i)) for i in range(note_count)]
        appends = [
            _time(
                lambda: services.note_write(
                    scope_id=scope,
                    session_id=SESSION,
                    owner=LOCAL_OWNER,
                    path=f"notes/{rng.randrange(note_count):04d}.md",
                    content="appended line\n",
                    mode="append",
                )
            )
            for _ in range(options["appends"])
        ]
        http_appends = [
            _time(
                lambda: post(
                    "/v1/sessions/notes/write",
                    {
                        **ids,
                        "path": f"notes/{rng.randrange(note_count):04d}.md",
                        "content": "via http\n",
                        "mode": "append",
                    },
                )
            )
            for _ in range(options["appends"] // 2)
        ]
        hint_text = selectors.recovery_hint(scope_id=scope, session_id=SESSION, owner=LOCAL_OWNER)
        hints = [
            _time(lambda: selectors.recovery_hint(scope_id=scope, session_id=SESSION, owner=LOCAL_OWNER))
            for _ in range(options["hints"])
        ]
        http_hints = [_time(lambda: post("/v1/sessions/hint", ids)) for _ in range(options["hints"] // 2)]
        pages = [
            _time(
                lambda: history.history_list(
                    scope_id=scope,
                    session_id=SESSION,
                    owner=LOCAL_OWNER,
                    after_position=rng.randrange(options["sources"]),
                    limit=100,
                )
            )
            for _ in range(50)
        ]
        reads = [
            _time(
                lambda: history.history_read(
                    scope_id=scope,
                    session_id=SESSION,
                    owner=LOCAL_OWNER,
                    from_position=rng.randrange(1, options["sources"]),
                    max_bytes=16_000,
                )
            )
            for _ in range(50)
        ]
        searches = [
            _time(
                lambda: history.history_search(
                    scope_id=scope,
                    session_id=SESSION,
                    owner=LOCAL_OWNER,
                    search=LineSearch(f"marker-{rng.randrange(1000):03d}"),
                )
            )
            for _ in range(10)
        ]
        note_search = [
            _time(
                lambda: selectors.note_search(
                    scope_id=scope,
                    session_id=SESSION,
                    owner=LOCAL_OWNER,
                    search=LineSearch(f"note {rng.randrange(note_count)}"),
                )
            )
            for _ in range(50)
        ]
        report = {
            "database": connection.vendor,
            "notes": note_count,
            "session_sources": options["sources"],
            "other_sources_in_scope": options["noise"],
            "hint_bytes": hint_text.size_bytes,
            "hint_truncated": hint_text.truncated,
            "note_write_create": _ms(create),
            "note_write_append_at_full_session": _ms(appends),
            "note_write_append_via_v1": _ms(http_appends),
            "hint": _ms(hints),
            "hint_via_v1": _ms(http_hints),
            "history_list_page_100": _ms(pages),
            "history_read_16000_bytes": _ms(reads),
            "history_search_full_session": _ms(searches),
            "note_search_1000_notes": _ms(note_search),
            **self._heavy(scope, options["heavy_sources"], post),
        }
        self.stdout.write(json.dumps(report, indent=2))

    @staticmethod
    def _heavy(scope: str, count: int, post: Callable[[str, dict[str, Any]], None]) -> dict[str, Any]:
        """Issue 33: a session of ``count`` sources of 200 KB each, captured through the real
        capture path (redacted once, there), then listed and searched through /v1; the reads run
        no detector, so they cost what they return."""
        heavy = "bench-heavy-session"
        line = "The deploy job copied the staging dump and restarted the workers one by one.\n"
        body = line * (200_000 // len(line))

        def capture_one(n: int) -> Callable[[], Any]:
            return lambda: source_capture(
                scope_id=scope,
                source_id=f"heavy-{n}",
                content=f"{body}needle-{n % 5}\n",
                metadata={"session_id": heavy, "kind": "prompt"},
            )

        capture = [_time(capture_one(n)) for n in range(count)]
        ids = {"scope_id": scope, "session_id": heavy}
        listed = [_time(lambda: post("/v1/sessions/history/list", ids)) for _ in range(10)]
        found = [
            _time(lambda: post("/v1/sessions/history/search", {**ids, "query": "needle-3"}))
            for _ in range(10)
        ]
        folded = [
            _time(
                lambda: post("/v1/sessions/history/search", {**ids, "query": "NEEDLE-3", "ignore_case": True})
            )
            for _ in range(10)
        ]
        return {
            "heavy_session_sources": count,
            "heavy_capture_200kb": _ms(capture),
            "heavy_history_list_via_v1": _ms(listed),
            "heavy_history_search_via_v1": _ms(found),
            "heavy_history_search_ignore_case_via_v1": _ms(folded),
        }

    def _sources(self, scope: str, count: int, noise: int, rng: random.Random) -> None:
        """The session's sources interleaved with other sessions', positions 1..count+noise."""
        owners = [SESSION] * count + [f"other-{i % 50}" for i in range(noise)]
        rng.shuffle(owners)
        rows = []
        seen = 0
        for position, owner in enumerate(owners, start=1):
            metadata: dict[str, Any] = {"session_id": owner, "kind": "prompt"}
            if owner == SESSION:
                metadata["window_id"] = f"w{seen // 500}"
                seen += 1
            content = (
                f"turn {position}: marker-{rng.randrange(1000):03d} "
                + "lorem ipsum dolor " * rng.randrange(5, 40)
            )
            rows.append(
                Source(
                    scope_id=scope,
                    source_type="content",
                    source_id=f"src-{position}",
                    content=content,
                    content_sha256="0" * 64,
                    metadata=metadata,
                    position=position,
                )
            )
        with transaction.atomic(durable=True):
            Source.objects.bulk_create(rows, batch_size=1000)
            ScopeState.objects.update_or_create(
                scope_id=scope, defaults={"last_source_position": len(owners)}
            )
