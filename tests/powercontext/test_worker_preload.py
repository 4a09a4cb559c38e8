"""Issue 19: a fresh gunicorn worker fills the caches of the most recently active scopes before it
accepts requests (powercontext/warmup.py, powercontext/search/preload.py): a write after the
preload is seen by the next ranking; the preload is bounded by a count, a time limit and the
vector cache's bytes; a failing scope is logged without its id and never stops the worker. Runs
on both databases."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from powercontext import warmup
from powercontext.core.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, Artifact, MemoryMembership
from powercontext.prepare.models import PrepareAggregate
from powercontext.search import preload
from powercontext.search.fulltext import bm25
from powercontext.search.ranking import rerank
from powercontext.search.vectors import embedding, vector_cache, vector_inprocess
from tests.fresh_process import run_script
from tests.powercontext.factories import make_memory

HARBOUR = [
    "the harbour master opens the gate at dawn",
    "fishing boats unload their catch on the east quay",
    "the ferry to the island leaves every two hours",
    "storm warnings are posted on the harbour office door",
]


def fresh_process() -> None:
    """Forget what this process cached: a newly started worker holds nothing."""
    vector_cache.clear_cache()
    rerank.clear_cache()
    bm25.clear_cache()


def cached(scope: str) -> set[str]:
    """Which per-scope caches of this process hold the scope at its current head."""
    revision = Artifact.objects.get(
        scope_id=scope, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID
    ).current_revision
    held = {
        "vectors": scope in vector_inprocess._cache,
        "experience": scope in vector_inprocess._experience_cache,
        "order": getattr(rerank.rerank_state._heads.get(scope), "revision", None) == revision,
        "totals": (scope, revision) in bm25._totals,
    }
    return {name for name, present in held.items() if present}


def seed(scope: str, notes: int = 3) -> None:
    for n in range(notes):
        make_memory(scope, f"{scope} note {n} about the harbour and its boats")


@pytest.mark.django_db
def test_a_fresh_worker_fills_the_caches_of_a_recent_scope_and_then_sees_a_write(
    embeddings: Any, django_assert_num_queries: Any
) -> None:
    for text in HARBOUR:
        make_memory("harbour", text)
    fresh_process()

    warmup.warm_up_worker()  # what gunicorn's post_worker_init runs

    assert cached("harbour") == {"vectors", "experience", "order", "totals"}
    query = embeddings.embed_query("who keeps the lighthouse")
    with django_assert_num_queries(1):  # the head's key only: the matrix is the preloaded one
        vector_inprocess.rank_memory("harbour", embedding.MODEL_ID, query, 1)

    written = make_memory("harbour", "the lighthouse keeper retires in spring")
    assert written.entry is not None
    membership = MemoryMembership.objects.get(
        entry__entry_id=written.entry.entry_id, to_revision__isnull=True
    )
    ranking = vector_inprocess.rank_memory("harbour", embedding.MODEL_ID, query, 1)
    assert ranking is not None
    assert ranking[0] == written.revision and ranking[1][0][0] == membership.pk
    response = Client().post(
        "/v1/context/prepare",
        json.dumps({"scope_id": "harbour", "query": "who keeps the lighthouse", "max_bytes": 8000}),
        content_type="application/json",
    )
    assert response.status_code == 200
    assert "the lighthouse keeper retires in spring" in response.json()["content"]
    assert cached("harbour") >= {"vectors", "order", "totals"}  # at the new head


@pytest.mark.django_db
def test_recently_prepared_scopes_come_first_then_recently_written_ones(settings: Any) -> None:
    for scope in ("old", "middle", "new"):  # written in this order: "new" most recently
        seed(scope)
    now = timezone.now()
    PrepareAggregate.objects.create(scope_id="old", hour=now.replace(minute=0, second=0), updated_at=now)
    PrepareAggregate.objects.create(  # prepared, but longer ago than counts as recent
        scope_id="middle", hour=now - timedelta(days=3), updated_at=now - timedelta(days=3)
    )

    assert warmup.recent_scopes(10) == ["old", "new", "middle"]
    assert warmup.recent_scopes(2) == ["old", "new"]
    assert warmup.recent_scopes(0) == []

    fresh_process()
    settings.POWERCONTEXT_PRELOAD_SCOPES = 2
    warmup.preload_recent_scopes()
    assert cached("old") == cached("new") == {"order", "totals"}  # no model in this test
    assert cached("middle") == set()


@pytest.mark.django_db
def test_the_time_limit_stops_the_preload_between_scopes() -> None:
    for scope in ("a", "b", "c"):
        seed(scope)
    fresh_process()
    ticks = count()  # a clock that moves one second each time it is read

    report = preload.preload_scopes(["a", "b", "c"], max_seconds=2, clock=lambda: float(next(ticks)))

    # read at 0 (start), 1 (before a), 2 (before b: the limit) and 3 (the report)
    assert (report.scopes, report.timed_out, report.seconds) == (1, True, 3.0)
    assert cached("a") == {"order", "totals"}
    assert cached("b") == cached("c") == set()


@pytest.mark.django_db
def test_vectors_are_preloaded_only_while_they_fit_in_the_cache(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed("small", 2)
    seed("large", 6)
    seed("fits-after", 1)
    fresh_process()
    row = embedding.DIMENSIONS * 4 + 8
    monkeypatch.setattr(vector_cache, "cache_bound_bytes", lambda: 5 * row)

    report = preload.preload_scopes(["small", "large", "fits-after"], max_seconds=60)

    assert (report.scopes, report.with_vectors, report.failed) == (3, 2, 0)
    assert "vectors" in cached("small") and "vectors" in cached("fits-after")
    assert cached("large") == {"order", "totals"}  # too large for the room left: not read
    assert vector_cache.cache_stats()["bytes"] <= 5 * row


@pytest.mark.django_db
def test_a_failing_scope_is_logged_without_its_id_and_the_rest_are_preloaded(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    seed("secret-scope-name")
    seed("fine")
    fresh_process()
    active_order = rerank.rerank_state.head

    def broken(scope_id: str, revision: int) -> Any:
        if scope_id == "secret-scope-name":
            raise ValueError("secret-scope-name")
        return active_order(scope_id, revision)

    monkeypatch.setattr(rerank.rerank_state, "head", broken)
    with caplog.at_level(logging.WARNING):
        warmup.warm_up_worker()

    assert cached("fine") == {"order", "totals"}
    warnings = [r.getMessage() for r in caplog.records if "warm-up" in r.getMessage()]
    assert warnings == ["worker warm-up: preloading a scope failed (ValueError)"]
    assert all("secret" not in repr(r.args) for r in caplog.records)


def test_a_worker_starts_when_the_database_cannot_be_read(caplog: pytest.LogCaptureFixture) -> None:
    # No database access in this test: the queries choosing the scopes raise.
    with caplog.at_level(logging.WARNING):
        warmup.preload_recent_scopes()
    assert [r.getMessage() for r in caplog.records] == [
        "worker warm-up: choosing the scopes to preload failed (RuntimeError)"
    ]


# Two fresh processes on one SQLite file: the first migrates and writes a scope, the second starts
# as a gunicorn worker does (gunicorn.conf.py's post_worker_init) and reports what its caches hold
# and how many statements its first vector ranking of that scope needed.
SEED = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from powercontext.memory.services import memory_remember
import sys
for text in sys.argv[1:]:
    memory_remember(scope_id="harbour", kind="note", text=text)
"""
WORKER = """
import json, runpy
import django
django.setup()
from django.db import connection
from django.test.utils import CaptureQueriesContext
from powercontext.search.vectors import embedding, vector_inprocess
from powercontext.search.ranking import rerank
runpy.run_path("gunicorn.conf.py")["post_worker_init"](None)
held = {"vectors": "harbour" in vector_inprocess._cache, "order": "harbour" in rerank.rerank_state._heads}
query = embedding.embedder().embed_query("who opens the gate")
with CaptureQueriesContext(connection) as queries:
    ranking = vector_inprocess.rank_memory("harbour", embedding.MODEL_ID, query, 1)
print(json.dumps({"held": held, "statements": len(queries), "ranked": len(ranking[1])}))
"""


def test_a_fresh_gunicorn_worker_process_starts_with_the_recent_scope_cached(tmp_path: Path) -> None:
    run_script(SEED, HARBOUR, tmp_path)
    report = run_script(WORKER, [], tmp_path)
    assert report == {"held": {"vectors": True, "order": True}, "statements": 1, "ranked": 1}
