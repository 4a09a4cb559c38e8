"""The in-process vector cache: bounded in bytes (``POWERCONTEXT_VECTOR_CACHE_MB``) across the
Memory and Experience caches, least recently used scopes out first, an entry larger than the bound
not kept; its bytes and bound are reported (verify, rebuild). Runs on both databases."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pytest
from django.core import checks
from django.core.management import call_command
from django.db import connection

from powercontext import search
from powercontext.core.checks import removed_settings
from powercontext.search.vectors import embedding, vector_cache, vector_inprocess
from tests.powercontext.factories import make_memory
from tests.powercontext.test_experience_vectors import seed_heads, unit

MIB = 1024 * 1024


def memory_scope(scope: str, count: int) -> None:
    for n in range(count):
        make_memory(scope, f"{scope} note {n} about the harbour and its boats")


def rank(scope: str, query_vector: Any) -> list[tuple[int, float]]:
    ranking = vector_inprocess.rank_memory(scope, embedding.MODEL_ID, query_vector, 5)
    assert ranking is not None
    return ranking[1]


def entry_bytes() -> dict[tuple[str, str], int]:
    return {key: size for key, (_, size) in vector_cache._entries.entries.items()}


@pytest.mark.django_db
def test_the_bound_is_in_bytes_and_least_recently_used_scopes_go_first(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_scope("m1", 3)
    memory_scope("m2", 3)
    seed_heads("e1", 3, np.random.default_rng(7))
    query = embeddings.embed_query("boats in the harbour")

    rank("m1", query)
    rank("m2", query)
    vector_inprocess.rank_experience("e1", embedding.MODEL_ID, query, 2)
    sizes = entry_bytes()
    assert set(sizes) == {("memory", "m1"), ("memory", "m2"), ("experience", "e1")}
    # Each entry counts at least its float32 matrix; the total is the sum of the entries.
    assert all(size >= 3 * embedding.DIMENSIONS * 4 for size in sizes.values())
    stats = vector_cache.cache_stats()
    assert stats == {"bytes": sum(sizes.values()), "bound_bytes": 256 * MIB, "scopes": 3, "too_large": 0}

    rank("m1", query)  # m1 used again: m2 is now the least recently used
    bound = sum(sizes.values()) + 1  # any growth goes over it
    monkeypatch.setattr(vector_cache, "cache_bound_bytes", lambda: bound)
    make_memory("m1", "a new note about sailing boats")
    rank("m1", query)  # the grown matrix is put: over the bound, so m2 goes, and only m2

    assert vector_inprocess._cache.get("m2") is None
    assert vector_inprocess._cache.get("m1") is not None
    assert vector_inprocess._experience_cache.get("e1") is not None
    after = vector_cache.cache_stats()
    assert after["bytes"] == sum(entry_bytes().values()) <= bound
    assert after["scopes"] == 2 and after["bound_bytes"] == bound


@pytest.mark.django_db
def test_a_scope_larger_than_the_bound_is_ranked_but_not_kept(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_scope("big", 4)
    query = embeddings.embed_query("boats in the harbour")
    expected = rank("big", query)
    size = entry_bytes()[("memory", "big")]
    vector_cache.clear_cache()
    monkeypatch.setattr(vector_cache, "cache_bound_bytes", lambda: size - 1)

    assert rank("big", query) == expected
    assert rank("big", query) == expected  # read again: nothing was kept
    assert vector_inprocess._cache.get("big") is None
    assert vector_cache.cache_stats()["bytes"] == 0
    assert vector_cache.cache_stats()["too_large"] == 2


@pytest.mark.django_db
def test_the_setting_sets_the_bound_and_zero_caches_nothing(settings: Any) -> None:
    rng = np.random.default_rng(3)
    seed_heads("e", 2, rng)
    settings.POWERCONTEXT_VECTOR_CACHE_MB = 3
    assert vector_cache.cache_stats()["bound_bytes"] == 3 * MIB

    settings.POWERCONTEXT_VECTOR_CACHE_MB = 0
    assert len(vector_inprocess.rank_experience("e", embedding.MODEL_ID, unit(rng), 2)) == 2
    assert vector_cache.cache_stats() == {"bytes": 0, "bound_bytes": 0, "scopes": 0, "too_large": 1}


@pytest.mark.django_db
def test_verify_and_rebuild_report_the_cache_and_no_extension(embeddings: Any) -> None:
    memory_scope("alpha", 2)
    rank("alpha", embeddings.embed_query("boats"))
    held = vector_cache.cache_stats()["bytes"]

    report = search.verify_index().as_dict()
    verify_out, rebuild_out = io.StringIO(), io.StringIO()
    call_command("rebuild_search_index", "--verify-only", stdout=verify_out)
    call_command("rebuild_search_index", "--no-progress", stdout=rebuild_out)

    assert held > 0
    assert report["vectors"]["cache"] == {  # type: ignore[index]
        "bytes": held,
        "bound_bytes": 256 * MIB,
        "scopes": 1,
        "too_large": 0,
    }
    vectors = json.loads(verify_out.getvalue())["vectors"]
    assert vectors["cache"]["bound_bytes"] == 256 * MIB
    assert set(vectors) == {"available", "checked", "missing", "extra", "mismatched", "pending", "cache"}
    assert "vector search: in-process exact; cache bound per process 256 MiB" in rebuild_out.getvalue()


def test_a_removed_vector_setting_still_in_the_environment_is_warned_about(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POWERCONTEXT_VECTOR_SEARCH", raising=False)
    assert removed_settings() == []

    monkeypatch.setenv("POWERCONTEXT_VECTOR_SEARCH", "value-not-echoed")
    found = [m for m in checks.run_checks() if m.id == "powercontext.W001"]

    assert len(found) == 1 and found[0].level == checks.WARNING
    assert "POWERCONTEXT_VECTOR_SEARCH" in found[0].msg and "docs/decisions.md" in (found[0].hint or "")
    assert "value-not-echoed" not in f"{found[0].msg} {found[0].hint}"


@pytest.mark.sqlite_only
@pytest.mark.django_db
def test_a_cold_scope_read_uses_the_index_of_active_memberships_on_sqlite() -> None:
    """The whole-scope vector read names the conditions of ``membership_active`` (migration
    0023), and SQLite, which chooses by the query's shape, reads the scope through it. On
    PostgreSQL the planner's choice depends on the tables' statistics: on a test database's
    handful of rows it picks other indexes, so the plan there was checked on the benchmark's
    database (docs/benchmarks.md: an index-only scan, 18.3 -> 2.5 ms), not here."""
    for scope in ("plan-a", "plan-b"):
        memory_scope(scope, 3)
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN QUERY PLAN " + vector_inprocess._ACTIVE_VECTORS_SQL + " ORDER BY m.id",
            ["plan-a", embedding.MODEL_ID],
        )
        plan = "\n".join(str(row[-1]) for row in cursor.fetchall())

    assert "SEARCH m USING INDEX membership_active" in plan, plan


@pytest.mark.sqlite_only
@pytest.mark.django_db
def test_the_vectors_added_since_a_cached_matrix_are_found_by_the_vector_index_on_sqlite() -> None:
    """A cached matrix brought forward after a write reads the vectors inserted since its largest
    id from the scope's vector index (scope, id), not by walking the scope's active memberships:
    that walk cost every prepare after a write ~30 ms at 100,000 entries on SQLite
    (docs/benchmarks.md, "The first prepare after a write on SQLite"). Whether the rows are the
    right ones is ``test_vector_room``'s (every step equals a fresh read, both databases)."""
    for scope in ("plan-a", "plan-b"):
        memory_scope(scope, 3)
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN QUERY PLAN " + vector_inprocess._ADDED_VECTORS_SQL,
            ["plan-a", 0, embedding.MODEL_ID, "plan-a"],
        )
        plan = "\n".join(str(row[-1]) for row in cursor.fetchall())

    assert "SEARCH x USING INDEX memory_vector_scope_id (scope_id=? AND id>?)" in plan, plan
    assert "membership_active" not in plan, plan
