"""A cached scope matrix follows writes in place: rows that join are written into the matrix's
room and rows that leave are marked, so a write costs O(changes), not a copy of the scope; the
matrix is copied only to make room or to drop many marked rows. Whatever its shape, a cached
matrix ranks as a fresh read of the scope does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.test import override_settings

from powercontext.memory import services as memory_services
from powercontext.search.vectors import embedding, shortlist, vector_inprocess
from tests.powercontext.factories import citation_of, make_memory

SCOPE = "room"
QUERY = "boats in the harbour"


def ranked(query_vector: Any) -> list[tuple[int, float]]:
    ranking = vector_inprocess.rank_memory(SCOPE, embedding.MODEL_ID, query_vector, 50)
    assert ranking is not None
    return ranking[1]


def cached() -> vector_inprocess.MemoryVectors:
    vectors = vector_inprocess._cache.get(SCOPE)
    assert vectors is not None
    return vectors


def as_fresh_read(query_vector: Any) -> None:
    """The cached matrix ranks as a whole read of the scope does (which is then dropped), and
    holds the same rows."""
    kept = cached()
    incremental = ranked(query_vector)
    vector_inprocess._cache.clear()
    fresh = ranked(query_vector)
    whole = cached()
    vector_inprocess._cache.put(SCOPE, kept)
    assert [pk for pk, _ in incremental] == [pk for pk, _ in fresh]
    assert np.allclose([s for _, s in incremental], [s for _, s in fresh], rtol=0, atol=1e-6)
    ids, rows = kept.live_rows()
    order = np.argsort(ids)
    assert ids[order].tolist() == whole.membership_ids.tolist()
    assert np.array_equal(rows[order], whole.matrix)
    if kept.codes is not None:
        assert whole.codes is not None
        assert np.array_equal(kept.codes.total, whole.codes.total)
        assert np.array_equal(kept.codes.centre, whole.codes.centre)
        live = np.flatnonzero(kept.membership_ids >= 0)[order]
        assert np.array_equal(kept.codes.bits[live], whole.codes.bits)


def follow_writes(embeddings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_inprocess, "ROOM_SHARE", 2)  # room for half as many rows again
    notes = [make_memory(SCOPE, f"note {n} about the harbour, its boats and tides") for n in range(12)]
    query = embeddings.embed_query(QUERY)
    ranked(query)
    read = cached()
    assert len(read.room.matrix) == len(read.membership_ids)  # read without room

    make_memory(SCOPE, "a new note about sailing boats in the harbour")
    ranked(query)
    first = cached()
    assert len(first.room.matrix) > len(first.membership_ids) == first.live == 13  # copied, with room
    as_fresh_read(query)
    before_ids, before_rows = first.membership_ids.copy(), first.matrix.copy()

    last = make_memory(SCOPE, "the harbour master logs every boat")
    ranked(query)
    appended = cached()
    assert appended.room is first.room and np.shares_memory(appended.matrix, first.matrix)
    assert appended.live == 14
    # The earlier matrix, which a request may still be ranking with, did not change.
    assert np.array_equal(first.membership_ids, before_ids) and np.array_equal(first.matrix, before_rows)
    as_fresh_read(query)

    retired = memory_services.memory_retire(scope_id=SCOPE, citation=citation_of(notes[3], at=last.revision))
    gone = int(read.membership_ids[3])  # notes[3]'s row: the fourth read (rows are read in id order)
    ranked(query)
    marked = cached()
    assert marked.room is first.room and marked.live == 13
    assert marked.membership_ids.tolist().count(-1) == 1 and gone not in marked.membership_ids.tolist()
    assert gone not in [pk for pk, _ in ranked(query)]
    as_fresh_read(query)

    revised = memory_services.memory_revise(
        scope_id=SCOPE,
        citation=citation_of(notes[5], at=retired.revision),
        kind="note",
        text="boats leave the harbour at dawn",
    )
    ranked(query)
    assert cached().room is first.room and cached().live == 13
    as_fresh_read(query)

    # Many marked rows: the next write copies the live rows alone into new room.
    monkeypatch.setattr(vector_inprocess, "DEAD_MIN", 1)
    memory_services.memory_retire(scope_id=SCOPE, citation=citation_of(notes[7], at=revised.revision))
    ranked(query)
    compacted = cached()
    assert compacted.room is not first.room and compacted.live == len(compacted.membership_ids) == 12
    assert -1 not in compacted.membership_ids.tolist()
    as_fresh_read(query)


@pytest.mark.django_db
def test_an_exactly_ranked_matrix_follows_writes_in_place(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    follow_writes(embeddings, monkeypatch)
    assert cached().codes is None


@pytest.mark.django_db
def test_a_shortlisted_matrix_follows_writes_in_place_with_its_codes(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every scope shortlisted, to four rows: marked rows must neither be kept nor counted.
    monkeypatch.setattr(shortlist, "MIN_DEPTH", 4)
    with override_settings(POWERCONTEXT_VECTOR_EXACT_ROWS=1):
        follow_writes(embeddings, monkeypatch)
        assert cached().codes is not None


def unit_rows(count: int, seed: int, shift: float = 0.0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(count, embedding.DIMENSIONS)).astype(np.float32)
    rows[:, :8] += shift
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


@pytest.mark.parametrize("shift", [0.0, 3.0], ids=["centre-stays", "centre-moves"])
def test_codes_appended_in_place_equal_the_codes_of_the_live_rows(shift: float) -> None:
    rows = unit_rows(1000, seed=3)
    codes = shortlist.build(rows)
    room = np.zeros((1500, codes.bits.shape[1]), dtype=np.uint64)
    room[:1000] = codes.bits
    codes = shortlist.Codes(codes.total, codes.centre, room[:1000])
    gone = np.zeros(1000, dtype=bool)
    gone[[0, 17, 999]] = True
    added = unit_rows(400 if shift else 3, seed=4, shift=shift)
    matrix = np.concatenate([rows, added])
    live = np.concatenate([~gone, np.ones(len(added), dtype=bool)])

    updated, buffer = shortlist.appended(codes, rows[gone], matrix, 1000, int(live.sum()), room)
    whole = shortlist.build(matrix[live])

    assert (buffer is room) is (shift == 0.0)  # coded in place unless the centre moved
    assert np.array_equal(updated.total, whole.total)
    assert np.array_equal(updated.centre, whole.centre)
    assert np.array_equal(updated.bits[live], whole.bits)
    assert len(buffer) == len(room)

    # The shortlist over the marked matrix is the shortlist over its live rows.
    query = unit_rows(1, seed=5, shift=shift)[0]
    for depth in (10, 300, len(whole.bits), len(whole.bits) + 5):
        kept = shortlist.shortlist(updated, query, depth, ~live)
        expected = shortlist.shortlist(whole, query, depth)
        assert kept.tolist() == np.flatnonzero(live)[expected].tolist(), depth
