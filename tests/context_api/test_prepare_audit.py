"""Prepare aggregates: metadata of each prepare, buffered in process, written later by a flusher."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
import time_machine
from django.core.management import call_command
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from powercontext.prepare import audit as prepare_audit
from powercontext.prepare import selection as context_selectors
from powercontext.prepare.explain import SKIP_REASONS, Summary
from powercontext.prepare.models import PREPARE_AGGREGATE_COUNTERS, PrepareAggregate
from powercontext.prepare.selection import ContextCandidates
from powercontext.prepare.stats import AggregateDelta, prepare_aggregates_add
from powercontext.prepare.tasks import prune_prepare_aggregates
from tests.conftest import Api
from tests.powercontext.test_concurrency import run_together

LONG = "deploy " + " ".join(["checklist"] * 150)  # cut by a 1,200-byte budget
SHORT = "deploy on tuesdays only"
MISSES = "deploy with the old script, now retired"
QUERY = "deploy zanzibar-query-marker"
NOON = datetime(2026, 3, 2, 12, 15, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _no_relevance_floor(settings: Any) -> None:
    """These tests count what the builder decided for fixed hits; the relevance floor (which
    would keep these test entries out of unrelated queries) has its own tests."""
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = 0.0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = 0.0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = 0.0


@pytest.fixture
def ops(api: Api, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Scope "ops": three entries in a fixed search order with the first repeated, so each
    prepare at 1,200 bytes admits two (one cut by the budget), drops a duplicate and skips one."""
    entries = {text: api.remember("ops", text)["entry"] for text in (SHORT, LONG, MISSES)}
    original = context_selectors.context_candidates

    def ordered(**kwargs: Any) -> ContextCandidates:
        found = original(**kwargs)
        if kwargs["scope_id"] != "ops":
            return found
        hits = sorted(found.memory_hits, key=lambda hit: [SHORT, LONG, MISSES].index(hit.text))
        return ContextCandidates(found.memory_ref, [*hits, hits[0]], found.experience_hits)

    monkeypatch.setattr(context_selectors, "context_candidates", ordered)
    return entries


def prepare(api: Api, scope_id: str, max_bytes: int = 1200, query: str = QUERY) -> dict[str, Any]:
    response = api.post("/v1/context/prepare", {"scope_id": scope_id, "query": query, "max_bytes": max_bytes})
    assert response.status_code == 200, response.content
    return response.json()


def flush() -> int:
    return prepare_audit.buffer().flush()


def bucket(scope_id: str) -> PrepareAggregate:
    return PrepareAggregate.objects.get(scope_id=scope_id)


def test_n_prepares_and_a_flush_hold_the_right_counts_and_sums(api: Api, ops: dict[str, Any]) -> None:
    with time_machine.travel(NOON, tick=False):
        bodies = [prepare(api, "ops") for _ in range(3)]
        empty = [prepare(api, "nobody", max_bytes=4000) for _ in range(2)]
        assert PrepareAggregate.objects.count() == 0  # nothing written before the flush
        assert prepare_audit.buffer().pending() == 5

        assert flush() == 2

    row = bucket("ops")
    assert row.hour == datetime(2026, 3, 2, 12, tzinfo=UTC) and row.search_mode == "fts"
    assert (row.prepares, row.empty) == (3, 0)
    assert (row.memory_candidates, row.experience_candidates) == (12, 0)
    assert (row.memory_admitted, row.experience_admitted) == (6, 0)
    assert row.duplicates == 3 and row.skipped_over_budget == 3
    assert row.truncated_budget == 3 and row.truncated_source_cap == 0
    assert row.skipped_blank == row.skipped_item_limit == row.skipped_window == 0
    assert row.content_bytes == sum(b["content_bytes"] for b in bodies) and row.max_bytes == 3600
    histogram = [getattr(row, name) for name in PREPARE_AGGREGATE_COUNTERS if name.startswith("latency_")][1:]
    assert sum(histogram) == 3 and row.latency_us > 0
    other = bucket("nobody")
    assert (other.prepares, other.empty, other.memory_candidates, other.content_bytes) == (2, 2, 0, 0)
    assert other.max_bytes == 8000 and all(b["status"] == "empty" for b in empty)
    assert prepare_audit.buffer().pending() == 0


def test_later_flushes_add_to_the_bucket_and_a_new_hour_opens_a_new_one(
    api: Api, ops: dict[str, Any]
) -> None:
    with time_machine.travel(NOON, tick=False):
        prepare(api, "ops")
        flush()
        prepare(api, "ops")
        flush()
    with time_machine.travel(NOON + timedelta(hours=1), tick=False):
        prepare(api, "ops")
        flush()

    rows = list(PrepareAggregate.objects.filter(scope_id="ops").order_by("hour"))
    assert [(r.hour.hour, r.prepares, r.memory_admitted) for r in rows] == [(12, 2, 4), (13, 1, 2)]


def test_nothing_stored_holds_the_query_a_text_or_an_id(api: Api, ops: dict[str, Any]) -> None:
    prepare(api, "ops")
    prepare(api, "ops", query="tuesdays zanzibar-query-marker")
    flush()

    stored = json.dumps(list(PrepareAggregate.objects.values()), default=str)
    assert "zanzibar" not in stored and "query" not in stored
    for text in (SHORT, LONG, MISSES):
        assert text[:20] not in stored
        entry = ops[text]["citation"]
        assert entry["entry_id"] not in stored and entry["entry_version_id"] not in stored


def test_the_response_is_the_same_with_the_audit_off(api: Api, ops: dict[str, Any], settings: Any) -> None:
    recorded = prepare(api, "ops")
    settings.POWERCONTEXT_PREPARE_AUDIT = False
    unrecorded = prepare(api, "ops")

    assert recorded == unrecorded
    assert prepare_audit.buffer().pending() == 1
    flush()
    assert bucket("ops").prepares == 1


def test_a_prepare_request_executes_no_write(api: Api, ops: dict[str, Any]) -> None:
    with CaptureQueriesContext(connection) as queries:
        prepare(api, "ops")

    statements = [q["sql"].lstrip().split(None, 1)[0].upper() for q in queries.captured_queries]
    assert statements and not {"INSERT", "UPDATE", "DELETE", "REPLACE"} & set(statements)
    assert PrepareAggregate.objects.count() == 0
    flush()
    assert bucket("ops").prepares == 1


def test_a_failing_flush_never_fails_a_prepare_and_loses_nothing(
    api: Api, ops: dict[str, Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def database_down(**kwargs: Any) -> int:
        raise OperationalError("server closed the connection")

    monkeypatch.setattr(prepare_audit, "prepare_aggregates_add", database_down)
    prepare(api, "ops")
    with pytest.raises(OperationalError):
        flush()
    prepare(api, "ops")  # still answered, and counted
    with caplog.at_level(logging.DEBUG):
        prepare_audit.Flusher(
            prepare_audit.buffer(), 60
        ).flush_once()  # the thread's path: logs, never raises
    assert "flush_failed error_class=OperationalError" in caplog.text
    assert "server closed" not in caplog.text
    assert prepare_audit.buffer().pending() == 2

    monkeypatch.undo()
    flush()
    assert bucket("ops").prepares == 2 and bucket("ops").memory_admitted == 4


def test_a_failure_while_recording_never_fails_a_prepare(
    api: Api, ops: dict[str, Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(summary: Summary, latency_seconds: float) -> list[int]:
        raise RuntimeError("a bug in the recorder")

    monkeypatch.setattr(prepare_audit, "counts_of", broken)
    with caplog.at_level(logging.INFO):
        body = prepare(api, "ops")

    assert body["status"] == "ready"
    assert "audit_failed error_class=RuntimeError" in caplog.text
    assert "zanzibar" not in caplog.text


def test_a_full_buffer_drops_new_buckets_and_logs_only_their_number(
    db: None, caplog: pytest.LogCaptureFixture
) -> None:
    audit = prepare_audit.PrepareAudit(max_buckets=2)
    for scope in ("a", "b", "c", "c", "a"):
        audit.record(
            scope_id=scope, search_mode="fts", counts=[1] * len(PREPARE_AGGREGATE_COUNTERS), now=NOON
        )
    with caplog.at_level(logging.INFO):
        assert audit.flush() == 2

    assert {r.scope_id: r.prepares for r in PrepareAggregate.objects.all()} == {"a": 2, "b": 1}
    assert "dropped_prepares=2" in caplog.text and "scope" not in caplog.text


def test_latency_lands_in_its_histogram_bucket() -> None:
    summary = Summary(
        empty=False,
        memory_candidates=0,
        experience_candidates=0,
        memory_admitted=0,
        experience_admitted=0,
        duplicates=0,
        skipped=(0,) * len(SKIP_REASONS),
        truncated=(0, 0),
        content_bytes=0,
        max_bytes=8000,
    )
    names = list(PREPARE_AGGREGATE_COUNTERS)

    def bucket_of(seconds: float) -> list[str]:
        counts = prepare_audit.counts_of(summary, seconds)
        return [
            n
            for n, v in zip(names, counts, strict=True)
            if n.startswith("latency_") and v and n != "latency_us"
        ]

    assert bucket_of(0.0004) == ["latency_le_1ms"]
    assert bucket_of(0.001) == ["latency_le_1ms"]
    assert bucket_of(0.0015) == ["latency_le_2ms"]
    assert bucket_of(0.3) == ["latency_le_500ms"]
    assert bucket_of(4.0) == ["latency_over_1000ms"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_flushers_lose_no_counts() -> None:
    """Two flushers (own connections) add to the same buckets at the same instant, repeatedly,
    including the first insert of a bucket; every count arrives."""
    width = len(PREPARE_AGGREGATE_COUNTERS)
    hours = [NOON.replace(minute=0) + timedelta(hours=h) for h in range(3)]

    def flusher(amount: int) -> Any:
        def run() -> int:
            audit = prepare_audit.PrepareAudit(100)
            for hour in hours:
                for scope in ("s1", "s2"):
                    audit.record(scope_id=scope, search_mode="fts", counts=[amount] * width, now=hour)
            return audit.flush()

        return run

    for _ in range(5):
        results = run_together([flusher(1), flusher(10)])
        assert results == [6, 6], results

    rows = list(PrepareAggregate.objects.all())
    assert len(rows) == 6
    for row in rows:
        assert all(getattr(row, name) == 55 for name in PREPARE_AGGREGATE_COUNTERS)


@pytest.mark.django_db(transaction=True)
def test_the_background_flusher_writes_the_buffer_and_flushes_once_more_on_stop(
    api: Api, settings: Any
) -> None:
    settings.POWERCONTEXT_PREPARE_AUDIT_FLUSH_SECONDS = 3600  # it would not wake by itself in this test
    prepare(api, "threaded")
    prepare(api, "threaded")
    assert PrepareAggregate.objects.count() == 0

    prepare_audit.stop_flusher()  # joins the thread, which flushes once more before ending

    assert bucket("threaded").prepares == 2


def test_old_buckets_are_pruned_by_the_command_and_the_task(db: None, settings: Any) -> None:
    width = len(PREPARE_AGGREGATE_COUNTERS)
    now = datetime(2026, 3, 31, 12, tzinfo=UTC)
    ages = {"fresh": 1, "edge": 29, "old": 31, "ancient": 400}
    prepare_aggregates_add(
        deltas=[AggregateDelta(s, now - timedelta(days=d), "fts", (1,) * width) for s, d in ages.items()],
        now=now,
    )
    out = StringIO()
    with time_machine.travel(now, tick=False):
        call_command("prune_prepare_aggregates", stdout=out)
        assert "deleted 2" in out.getvalue()
        assert set(PrepareAggregate.objects.values_list("scope_id", flat=True)) == {"fresh", "edge"}
        assert prune_prepare_aggregates.delay(days=7).get() == {"deleted": 1}
    assert set(PrepareAggregate.objects.values_list("scope_id", flat=True)) == {"fresh"}
    assert "powercontext.prune_prepare_aggregates" in {
        entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()
    }


def test_the_operation_table_prepare_records_and_other_callers_do_not(api: Api, ops: dict[str, Any]) -> None:
    from powercontext.prepare.application import PrepareRequest, ScopedContextApplication

    ScopedContextApplication().prepare(PrepareRequest(scope_id="ops", query=QUERY, max_bytes=1200))
    assert prepare_audit.buffer().pending() == 0
    prepare(api, "ops")
    assert prepare_audit.buffer().pending() == 1


def test_a_forked_child_starts_with_an_empty_buffer_and_its_own_flusher(
    api: Api, ops: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(api, "ops")
    parent = prepare_audit.buffer()
    assert parent.pending() == 1

    monkeypatch.setattr(prepare_audit.os, "getpid", lambda: -1)  # as after os.fork()
    child = prepare_audit.buffer()

    assert child is not parent and child.pending() == 0  # the parent's prepares are the parent's to flush
    prepare(api, "ops")
    assert child.pending() == 1 and parent.pending() == 1
