"""The Memory vector index: written with entries, searched exactly per scope, fused with full
text, rebuilt and verified with the other indexes, and skipped (never failing a write) when the
model is unavailable. Runs on both databases."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import OperationalError, connection

from powercontext import search
from powercontext.core.hits import ArtifactRef
from powercontext.core.models import MemoryEntryVector
from powercontext.memory import services as memory_services
from powercontext.memory.selectors import memory_search
from powercontext.prepare.selection import context_candidates
from powercontext.search.ranking import fusion
from powercontext.search.vectors import embedding, vector_inprocess
from tests.powercontext.factories import citation_of, make_memory

PAINTING = "Ann painted a sunrise over the lake"
FILLER = [
    "the weather was mild and sunny",
    "lunch is served at noon",
    "the office plants need water",
    "a meeting about the budget",
    "parking is behind the building",
]
# Shares no word (and no stem) with PAINTING: only the vector ranking can find it.
PARAPHRASE = "artwork of the morning sky"


def seed(scope: str = "vec") -> list[memory_services.MemoryMutation]:
    return [make_memory(scope, text) for text in [PAINTING, *FILLER]]


def texts(rows: list[Any]) -> list[str]:
    return [row.text for row in rows]


@pytest.mark.django_db
def test_each_active_entry_version_gets_one_unit_vector_at_write_time(embeddings: Any) -> None:
    mutations = seed()

    rows = MemoryEntryVector.objects.filter(scope_id="vec")
    assert rows.count() == len(mutations)
    for row in rows:
        vector = embedding.from_bytes(row.vector)
        assert row.model == embedding.MODEL_ID and vector.shape == (embedding.DIMENSIONS,)
        assert abs(float((vector * vector).sum()) - 1.0) < 1e-4


@pytest.mark.django_db
def test_vector_search_finds_a_paraphrase_that_full_text_misses(embeddings: Any) -> None:
    seed()

    assert search.search_memory("vec", PARAPHRASE, 10) == []
    found = search.vector_search_memory("vec", PARAPHRASE, 3)

    assert texts(found)[0] == PAINTING
    assert len(found) == 3 and all(row.matched_by == ("vector",) for row in found)
    scores = [row.score for row in found]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)


@pytest.mark.django_db
def test_hybrid_fuses_both_rankings_and_cites_one_head(embeddings: Any) -> None:
    mutations = seed()
    make_memory("vec", "the lake froze in january")

    result = memory_search(scope_id="vec", query="painting the lake", limit=4, mode="hybrid")

    assert result.mode == "hybrid"
    assert result.hits[0].text == PAINTING and result.hits[0].matched_by == ("fts", "vector")
    assert {hit.revision for hit in result.hits} == {mutations[-1].revision + 1}
    assert result.revision == mutations[-1].revision + 1
    scores = [hit.score for hit in result.hits]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 1.0


@pytest.mark.django_db
def test_auto_means_hybrid_when_the_model_is_available(embeddings: Any) -> None:
    seed()

    assert search.available_modes() == ("auto", "fts", "vector", "hybrid")
    result = memory_search(scope_id="vec", query=PARAPHRASE, limit=2, mode="auto")

    assert result.mode == "hybrid" and result.hits[0].text == PAINTING


@pytest.mark.django_db
def test_new_revised_and_retired_entries_are_seen_by_the_next_vector_search(embeddings: Any) -> None:
    mutations = seed()
    assert texts(search.vector_search_memory("vec", PARAPHRASE, 1)) == [PAINTING]

    revised = memory_services.memory_revise(
        scope_id="vec",
        citation=citation_of(mutations[0], at=mutations[-1].revision),
        kind="note",
        text="Ann sold her boat",
    )
    assert PAINTING not in texts(search.vector_search_memory("vec", PARAPHRASE, 10))
    make_memory("vec", "a watercolour of the dawn")
    assert texts(search.vector_search_memory("vec", PARAPHRASE, 1)) == ["a watercolour of the dawn"]

    assert revised.entry is not None
    memory_services.memory_retire(scope_id="vec", citation=citation_of(revised, at=revised.revision + 1))
    assert "Ann sold her boat" not in texts(search.vector_search_memory("vec", "boat", 10))
    # Retired and superseded versions keep no vector.
    assert MemoryEntryVector.objects.filter(scope_id="vec").count() == len(FILLER) + 1


@pytest.mark.django_db
def test_vectors_never_cross_scopes(embeddings: Any) -> None:
    alpha = seed("alpha")
    make_memory("Alpha", "a sketch of the evening sky")

    ids = {m.entry.entry_id for m in alpha if m.entry is not None}
    for mode in ("vector", "hybrid"):
        found = memory_search(scope_id="alpha", query=PARAPHRASE, limit=50, mode=mode)
        assert {hit.entry_id for hit in found.hits} <= ids and found.hits
        other = memory_search(scope_id="Alpha", query=PARAPHRASE, limit=50, mode=mode)
        assert [hit.text for hit in other.hits] == ["a sketch of the evening sky"]
    assert search.vector_search_memory("nobody", PARAPHRASE, 5) == []


@pytest.mark.django_db
def test_prepare_candidates_come_from_hybrid_search(embeddings: Any) -> None:
    seed()

    found = context_candidates(scope_id="vec", query=PARAPHRASE, memory_limit=16, experience_limit=8)

    assert found.memory_hits[0].text == PAINTING
    assert found.memory_hits[0].matched_by == ("vector",)
    assert len(found.memory_hits) <= 16
    assert found.memory_ref is not None and {h.memory_ref for h in found.memory_hits} == {found.memory_ref}


# --- rebuild and verify -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_verify_detects_missing_extra_and_damaged_vectors_and_repair_fixes_them(embeddings: Any) -> None:
    mutations = seed()
    assert search.verify_index().ok

    versions = [m.entry.entry_version_id for m in mutations if m.entry is not None]
    rows = MemoryEntryVector.objects.filter(scope_id="vec").select_related("entry_version")
    by_version = {row.entry_version.entry_version_id: row for row in rows}
    by_version[versions[0]].delete()
    MemoryEntryVector.objects.filter(pk=by_version[versions[1]].pk).update(
        vector=b"\0" * 4 * embedding.DIMENSIONS
    )
    MemoryEntryVector.objects.filter(pk=by_version[versions[2]].pk).update(model="another-model")
    retired = memory_services.memory_retire(
        scope_id="vec", citation=citation_of(mutations[3], at=mutations[-1].revision)
    )
    # A stale row for the retired version, as a crash between writes could never leave but a
    # restored backup might.
    stale = by_version[versions[3]]
    MemoryEntryVector.objects.create(
        entry_version_id=stale.entry_version_id, scope_id="vec", model=embedding.MODEL_ID, vector=stale.vector
    )

    report = search.verify_index()
    assert not report.ok
    assert (report.vectors_missing, report.vectors_mismatched, report.vectors_extra) == (1, 2, 1)
    assert (report.missing, report.extra, report.mismatched) == (0, 0, 0)
    assert report.as_dict()["vectors"]["checked"] == len(mutations) - 1

    repaired = search.verify_index(repair=True)
    assert repaired.repaired
    assert search.verify_index().ok
    assert retired.revision > 0
    assert texts(search.vector_search_memory("vec", PARAPHRASE, 1)) == [PAINTING]


@pytest.mark.django_db
def test_a_rebuild_fills_vectors_written_while_the_model_was_unavailable(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "embedder", lambda: None)
    seed()
    assert MemoryEntryVector.objects.count() == 0
    monkeypatch.undo()
    embedding.reset()
    monkeypatch.setattr(embedding, "load_embedder", embedding.Embedder)

    report = search.verify_index()
    assert report.vectors_available and report.vectors_missing == len(FILLER) + 1 and not report.ok

    search.rebuild_index(scope_id="vec")

    assert MemoryEntryVector.objects.count() == len(FILLER) + 1
    assert search.verify_index().ok
    assert texts(search.vector_search_memory("vec", PARAPHRASE, 1)) == [PAINTING]


@pytest.mark.django_db
def test_a_full_rebuild_keeps_sound_vectors_and_drops_rows_of_unknown_scopes(embeddings: Any) -> None:
    seed()
    before = list(MemoryEntryVector.objects.order_by("pk").values_list("pk", "vector"))

    search.rebuild_index()

    assert list(MemoryEntryVector.objects.order_by("pk").values_list("pk", "vector")) == before
    assert search.rebuild_vectors() == 0


# --- the model is unavailable -----------------------------------------------------------------------


@pytest.mark.django_db
def test_without_the_model_writes_succeed_auto_is_fts_and_verify_skips_vectors() -> None:
    mutations = seed()

    assert all(m.entry is not None for m in mutations)
    assert MemoryEntryVector.objects.count() == 0
    assert search.available_modes() == ("auto", "fts")
    assert search.best_mode() == "fts"
    result = memory_search(scope_id="vec", query="painted", limit=5, mode="auto")
    assert result.mode == "fts" and [h.text for h in result.hits] == [PAINTING]
    assert search.vector_search_memory("vec", PARAPHRASE, 5) == []
    found = context_candidates(scope_id="vec", query="painted", memory_limit=16, experience_limit=8)
    assert [h.matched_by for h in found.memory_hits] == [("fts",)]
    report = search.verify_index()
    assert report.ok and not report.vectors_available and report.as_dict()["vectors"]["available"] is False
    assert search.rebuild_vectors() == 0


@pytest.mark.django_db
def test_a_model_that_fails_to_load_is_tried_once_and_logged() -> None:
    calls = []

    def broken() -> Any:
        calls.append(1)
        raise OSError("model file unreadable")

    embedding.reset()
    original = embedding.load_embedder
    embedding.load_embedder = broken  # type: ignore[assignment]
    try:
        make_memory("vec", "first")
        make_memory("vec", "second")
        assert search.available_modes() == ("auto", "fts")
    finally:
        embedding.load_embedder = original  # type: ignore[assignment]
    assert calls == [1]
    assert MemoryEntryVector.objects.count() == 0


def test_fusion_weights_ranks_and_merges_channels() -> None:
    def row(pk: int, channel: str) -> search.MemoryHit:
        head = ArtifactRef("memory", "memory", 3)
        return search.MemoryHit(head, f"e{pk}", f"v{pk}", f"t{pk}", 0.5, (channel,), key=pk)

    lexical = [row(1, "fts"), row(2, "fts")]
    semantic = [row(2, "vector"), row(3, "vector")]

    fused = fusion.fuse([(1.0, lexical), (0.8, semantic)], 10)

    assert [r.key for r in fused] == [2, 1, 3]
    assert fused[0].matched_by == ("fts", "vector") and fused[0].score == pytest.approx(
        (1.0 / (fusion.RRF_K + 2) + 0.8 / (fusion.RRF_K + 1)) / (1.8 / (fusion.RRF_K + 1))
    )
    assert all(0.0 < r.score <= 1.0 for r in fused)
    assert fusion.fuse([(1.0, lexical), (0.8, semantic)], 1) == fused[:1]


@pytest.mark.django_db
def test_the_cached_matrix_follows_writes_by_deltas_and_matches_a_full_read(embeddings: Any) -> None:
    mutations = seed()
    assert search.vector_search_memory("vec", PARAPHRASE, 1)  # cache the matrix
    head = mutations[-1].revision
    revised = memory_services.memory_revise(
        scope_id="vec", citation=citation_of(mutations[1], at=head), kind="note", text="lunch moved to one"
    )
    memory_services.memory_retire(scope_id="vec", citation=citation_of(mutations[2], at=revised.revision))
    make_memory("vec", "a watercolour of the dawn")
    assert search.vector_search_memory("vec", PARAPHRASE, 1)

    cached = vector_inprocess._cache["vec"]
    full = vector_inprocess._load("vec", cached.revision, cached.max_id, embedding.MODEL_ID)
    cached_ids, cached_rows = cached.live_rows()
    assert sorted(cached_ids.tolist()) == full.membership_ids.tolist()
    by_id = dict(zip(cached_ids.tolist(), cached_rows, strict=True))
    for pk, row in zip(full.membership_ids.tolist(), full.matrix, strict=True):
        assert (by_id[pk] == row).all()


@pytest.mark.django_db
def test_a_whole_scope_is_read_in_chunks_into_the_matrix_a_full_read_gives(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed("chunks")
    monkeypatch.setattr(vector_inprocess, "READ_CHUNK_ROWS", 2)
    sql = vector_inprocess._ACTIVE_VECTORS_SQL + " ORDER BY m.id"
    with connection.cursor() as cursor:
        cursor.execute(sql, ["chunks", embedding.MODEL_ID])
        want_ids, want = vector_inprocess._matrix(cursor.fetchall())
        # The count said too few (rows written after it), exactly right, or too many (rows gone).
        for expected in (0, 1, len(want_ids), len(want_ids) + 5):
            cursor.execute(sql, ["chunks", embedding.MODEL_ID])
            ids, matrix = vector_inprocess._read_matrix(cursor, expected)
            assert ids.tolist() == want_ids.tolist(), expected
            assert matrix.shape == want.shape and (matrix == want).all(), expected
            assert matrix.base is None  # no larger array kept alive behind a trimmed view


@pytest.mark.postgres_only
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("above", "disabled", "cursors"),
    [(5, False, 1), (6, False, 0), (5, True, 0)],
    ids=["large-scope", "small-scope", "disabled"],
)
def test_on_postgresql_a_large_scope_is_read_through_a_server_side_cursor(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch, above: int, disabled: bool, cursors: int
) -> None:
    """A scope of more than SERVER_SIDE_ROWS vectors: the client holds one chunk of rows at a
    time, not the whole result; a smaller one is read by one plain statement; none with
    DISABLE_SERVER_SIDE_CURSORS (a pooler in transaction mode)."""
    seed("server-side")  # six vectors
    monkeypatch.setattr(vector_inprocess, "READ_CHUNK_ROWS", 2)
    monkeypatch.setattr(vector_inprocess, "SERVER_SIDE_ROWS", above)
    if disabled:
        monkeypatch.setitem(connection.settings_dict, "DISABLE_SERVER_SIDE_CURSORS", True)
    convert = vector_inprocess._matrix
    open_cursors: list[int] = []

    def counting(rows: Any) -> Any:
        with connection.cursor() as cursor:  # the same connection, while the read is under way
            cursor.execute("SELECT COUNT(*) FROM pg_cursors WHERE NOT is_holdable")
            open_cursors.append(int(cursor.fetchone()[0]))
        return convert(rows)

    monkeypatch.setattr(vector_inprocess, "_matrix", counting)
    vector_inprocess._cache.clear()
    read = vector_inprocess.memory_vectors("server-side", embedding.MODEL_ID)

    assert open_cursors == [cursors] * 3  # six rows, two at a time
    assert len(read.membership_ids) == 1 + len(FILLER)


THREADS = 4


def _cold_threads(monkeypatch: pytest.MonkeyPatch, scope: str, load: Any) -> tuple[list[Any], list[Any]]:
    """THREADS threads ask ``scope``'s cold matrix at once; the first read (``load`` in place of
    ``_load``) starts only once every thread has missed the cache and asked for the scope's lock.
    Returns what each thread got (a matrix or the exception it raised) and the reads made."""
    vector_inprocess._cache.clear()
    stripe = vector_inprocess._STRIPES[hash(scope) % len(vector_inprocess._STRIPES)]
    lock = stripe.lock
    arrived = threading.Condition()
    waiting = [0]

    class CountingLock:
        """The stripe's lock, counting the threads that came to take it."""

        def __enter__(self) -> None:
            with arrived:
                waiting[0] += 1
                arrived.notify_all()
            lock.acquire()

        def __exit__(self, *exc: object) -> None:
            lock.release()

    loads: list[Any] = []

    def first_waits_for_all(*args: Any) -> Any:
        loads.append(args)
        with arrived:
            assert arrived.wait_for(lambda: waiting[0] == THREADS, timeout=60)
        return load(*args)

    monkeypatch.setattr(stripe, "lock", CountingLock())
    monkeypatch.setattr(vector_inprocess, "_load", first_waits_for_all)
    results: list[Any] = [None] * THREADS

    def ask(index: int) -> None:
        try:
            results[index] = vector_inprocess.memory_vectors(scope, embedding.MODEL_ID)
        except Exception as exc:  # what the thread's request would have seen
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=ask, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results, loads


@pytest.mark.django_db(transaction=True)
def test_threads_asking_a_cold_scope_at_once_read_it_once(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed("cold")
    results, loads = _cold_threads(monkeypatch, "cold", vector_inprocess._load)

    assert len(loads) == 1
    assert len(results[0].membership_ids) == 1 + len(FILLER)
    assert all(result is results[0] for result in results)


@pytest.mark.django_db(transaction=True)
def test_threads_that_waited_for_a_read_the_database_failed_fail_at_once(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed("hung")
    read = vector_inprocess._load

    def unanswered(*args: Any) -> Any:
        raise OperationalError("the database did not answer")

    results, loads = _cold_threads(monkeypatch, "hung", unanswered)

    # One read waited on the database; the others did not wait for it again.
    assert len(loads) == 1
    assert all(isinstance(result, OperationalError) for result in results)
    # The next request reads normally.
    monkeypatch.setattr(vector_inprocess, "_load", read)
    assert len(vector_inprocess.memory_vectors("hung", embedding.MODEL_ID).membership_ids) == 1 + len(FILLER)


def hit_reads(captured: Any) -> int:
    """How many statements of ``captured`` read vector hits' rows (``queries._HITS_SQL``)."""
    return sum(
        1
        for query in captured.captured_queries
        if "a.current_revision" in query["sql"]
        and "v.text" in query["sql"]
        and ("m.id IN" in query["sql"] or "m.id = ANY" in query["sql"])
    )


def summary(rows: list[Any]) -> list[tuple[Any, ...]]:
    return [(row.key, row.entry_version_id, row.text, row.revision, row.score) for row in rows]


@pytest.mark.django_db
def test_a_head_s_hit_rows_are_read_once_and_a_write_reads_them_again(embeddings: Any) -> None:
    from django.test.utils import CaptureQueriesContext

    mutations = seed()
    with CaptureQueriesContext(connection) as first:
        found = search.vector_search_memory("vec", PARAPHRASE, 4)
    with CaptureQueriesContext(connection) as again:
        repeated = search.vector_search_memory("vec", PARAPHRASE, 4)
    with CaptureQueriesContext(connection) as wider:
        deeper = search.vector_search_memory("vec", PARAPHRASE, 6)

    assert hit_reads(first) == 1 and hit_reads(again) == 0  # the same head: nothing read again
    assert summary(repeated) == summary(found) and texts(found)[0] == PAINTING
    assert hit_reads(wider) == 1 and summary(deeper)[:4] == summary(found)  # only the two new rows
    assert len({row.revision for row in deeper}) == 1

    # A revision moves the head: its rows cite the new head, with the revised text.
    revised = memory_services.memory_revise(
        scope_id="vec",
        citation=citation_of(mutations[0], at=mutations[-1].revision),
        kind="note",
        text="Ann painted the dawn over the lake in oils",
    )
    with CaptureQueriesContext(connection) as moved:
        after = search.vector_search_memory("vec", PARAPHRASE, 6)
    assert hit_reads(moved) == 1
    assert {row.revision for row in after} == {revised.revision}
    assert PAINTING not in texts(after) and "Ann painted the dawn over the lake in oils" in texts(after)


@pytest.mark.django_db
def test_the_rows_kept_per_head_are_bounded(embeddings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.test.utils import CaptureQueriesContext

    from powercontext.search.vectors import queries

    monkeypatch.setattr(queries, "ROWS_KEPT", 3)
    seed()
    ranked = search.vector_search_memory("vec", PARAPHRASE, 6)
    kept = queries._head_rows.get("vec")
    assert kept is not None and len(kept.rows) == 3 and set(kept.rows) < {row.key for row in ranked}

    with CaptureQueriesContext(connection) as captured:
        again = search.vector_search_memory("vec", PARAPHRASE, 6)
    assert hit_reads(captured) == 1 and summary(again) == summary(ranked)
    kept = queries._head_rows.get("vec")
    assert kept is not None and len(kept.rows) == 3
    assert kept.size == sum(queries._row_size(row) for row in kept.rows.values())
