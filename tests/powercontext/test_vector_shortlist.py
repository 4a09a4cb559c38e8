"""Large scopes' vector ranking over a shortlist: sign codes around an exact centre, kept up to
date by deltas, the same in every process whatever order its rows are held in, and ranking the
rows it keeps exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.test import override_settings

from powercontext import search
from powercontext.memory import services as memory_services
from powercontext.search.vectors import embedding, shortlist, vector_inprocess
from tests.powercontext.factories import citation_of, make_memory
from tests.powercontext.test_vector_search import FILLER, PAINTING

DIMENSIONS = 384


def unit_rows(count: int, seed: int, shift: float = 0.0) -> np.ndarray[Any, Any]:
    """``count`` random unit vectors; ``shift`` moves them all along the first axes first."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(count, DIMENSIONS)).astype(np.float32)
    rows[:, :8] += shift
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def test_the_codes_do_not_depend_on_the_order_of_the_rows() -> None:
    rows = unit_rows(3000, seed=1, shift=0.5)
    order = np.random.default_rng(2).permutation(len(rows))

    codes, shuffled = shortlist.build(rows), shortlist.build(rows[order])

    assert np.array_equal(codes.total, shuffled.total)
    assert np.array_equal(codes.centre, shuffled.centre)
    assert np.array_equal(codes.bits[order], shuffled.bits)
    # The centre is the rows' mean, to its rounding step.
    assert np.abs(codes.centre - rows.mean(axis=0)).max() <= 0.5 / shortlist.CENTRE_STEP + 1e-6
    # A bit is set where the coordinate is above the centre.
    expected = np.packbits(rows[7] > codes.centre).view(np.uint64)
    assert np.array_equal(codes.bits[7], expected)


@pytest.mark.parametrize("shift", [0.0, 3.0], ids=["centre-stays", "centre-moves"])
def test_codes_updated_by_a_delta_equal_the_codes_of_the_whole_new_matrix(shift: float) -> None:
    rows = unit_rows(2000, seed=3)
    codes = shortlist.build(rows)
    keep = np.ones(len(rows), dtype=bool)
    keep[[0, 17, 1999]] = False
    matrix = np.concatenate([rows[keep], unit_rows(400 if shift else 3, seed=4, shift=shift)])

    updated = shortlist.update(codes, keep, rows[~keep], matrix)
    whole = shortlist.build(matrix)

    assert np.array_equal(updated.centre, codes.centre) is (shift == 0.0)
    assert np.array_equal(updated.total, whole.total)
    assert np.array_equal(updated.centre, whole.centre)
    assert np.array_equal(updated.bits, whole.bits)


def test_the_shortlist_keeps_every_row_tied_at_its_cut_whatever_their_order() -> None:
    rows = unit_rows(500, seed=5)
    rows[100:140] = rows[3]  # forty rows at one distance from any query
    query = unit_rows(1, seed=6)[0]
    codes = shortlist.build(rows)
    distance = np.array(
        [int(np.bitwise_count(row ^ shortlist.sign_bits(query, codes.centre)[0]).sum()) for row in codes.bits]
    )
    depth = int(np.flatnonzero(np.sort(distance) == distance[3])[0]) + 1  # the cut falls among the tie

    kept = shortlist.shortlist(codes, query, depth)
    order = np.random.default_rng(7).permutation(len(rows))
    kept_shuffled = shortlist.shortlist(shortlist.build(rows[order]), query, depth)

    assert kept.tolist() == np.flatnonzero(distance <= distance[3]).tolist()
    assert set(range(100, 140)) <= set(kept.tolist())
    assert sorted(order[kept_shuffled].tolist()) == kept.tolist()


def test_distances_and_cosines_taken_block_by_block_are_those_of_the_whole_matrix() -> None:
    """Across several blocks and a partial last one: the shortlist is every row within the
    depth-th nearest Hamming distance over all rows, and each kept row's cosine is its dot
    product with the query."""
    rows = unit_rows(2 * 8192 + 333, seed=11, shift=0.2)
    query = unit_rows(1, seed=12, shift=0.2)[0]
    codes = shortlist.build(rows)
    distance = np.bitwise_count(codes.bits ^ shortlist.sign_bits(query, codes.centre)[0]).sum(axis=1)
    depth = 1000

    kept = shortlist.shortlist(codes, query, depth)
    scores = shortlist.cosines(rows, kept, query)

    assert kept.tolist() == np.flatnonzero(distance <= np.sort(distance)[depth - 1]).tolist()
    assert len(kept) > 256 and len(kept) % 256  # several gather blocks, the last one partial
    assert scores.dtype == np.float32
    assert np.allclose(scores, rows[kept] @ query, rtol=0, atol=1e-6)


def test_a_shortlist_no_shorter_than_the_scope_is_the_whole_scope() -> None:
    rows = unit_rows(300, seed=8)
    assert shortlist.shortlist(shortlist.build(rows), rows[0], 300).tolist() == list(range(300))
    assert shortlist.depth_for(10) == shortlist.MIN_DEPTH
    assert shortlist.depth_for(1_000_000) == 1_000_000 // shortlist.DEPTH_SHARE


def test_the_nearest_rows_of_a_query_near_stored_rows_survive_the_shortlist() -> None:
    """Rows in 400 groups of 50 (notes about one topic) and queries near one row: the exact top
    ten over the shortlist is the exact top ten over all 20,000 rows."""
    rng = np.random.default_rng(9)
    topics = unit_rows(400, seed=10, shift=0.3)
    rows = np.repeat(topics, 50, axis=0) + rng.normal(scale=0.04, size=(20_000, DIMENSIONS)).astype(
        np.float32
    )
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    codes = shortlist.build(rows)
    for target in rng.choice(len(rows), size=30, replace=False):
        query = rows[target] + rng.normal(scale=0.03, size=DIMENSIONS).astype(np.float32)
        query /= np.linalg.norm(query)
        kept = shortlist.shortlist(codes, query, shortlist.depth_for(len(rows)))
        assert len(kept) < len(rows) // 2
        exact = np.argsort(-(rows @ query), kind="stable")[:10]
        approximate = kept[np.argsort(-(rows[kept] @ query), kind="stable")[:10]]
        assert approximate.tolist() == exact.tolist()


@pytest.mark.django_db
def test_a_scope_above_the_bound_ranks_over_its_shortlist_and_keeps_its_codes_current(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with override_settings(POWERCONTEXT_VECTOR_EXACT_ROWS=100):
        mutations = [make_memory("small", text) for text in [*FILLER, PAINTING]]
        search.vector_search_memory("small", "artwork of the morning sky", 3)
        assert vector_inprocess._cache["small"].codes is None  # at or under the bound: exact

    with override_settings(POWERCONTEXT_VECTOR_EXACT_ROWS=3):
        vector_inprocess._cache.clear()
        exact = search.vector_search_memory("small", "artwork of the morning sky", 3)
        cached = vector_inprocess._cache["small"]
        assert cached.codes is not None
        assert np.array_equal(cached.codes.bits, shortlist.build(cached.matrix).bits)
        # Shortlist at least as long as the scope: the same ranking as an exact one.
        with override_settings(POWERCONTEXT_VECTOR_EXACT_ROWS=100):
            vector_inprocess._cache.clear()
            assert search.vector_search_memory("small", "artwork of the morning sky", 3) == exact
        assert exact[0].text == PAINTING

        # Writes: the cached codes follow by deltas and equal a whole build of the new matrix.
        search.vector_search_memory("small", "artwork of the morning sky", 3)
        head = mutations[-1].revision
        revised = memory_services.memory_revise(
            scope_id="small",
            citation=citation_of(mutations[1], at=head),
            kind="note",
            text="lunch moved to one",
        )
        memory_services.memory_retire(
            scope_id="small", citation=citation_of(mutations[2], at=revised.revision)
        )
        make_memory("small", "a watercolour of the dawn")
        search.vector_search_memory("small", "artwork of the morning sky", 3)
        refreshed = vector_inprocess._cache["small"]
        assert refreshed.revision > cached.revision and refreshed.codes is not None
        whole = shortlist.build(refreshed.matrix)
        assert np.array_equal(refreshed.codes.total, whole.total)
        assert np.array_equal(refreshed.codes.bits, whole.bits)

        # Only the shortlist's rows are ranked, each by its exact cosine: here a shortlist of the
        # two rows farthest from the query, which an exact ranking would put last.
        query = embeddings.embed_query("artwork of the morning sky")
        cosines = refreshed.matrix @ query
        farthest = np.sort(np.argsort(cosines, kind="stable")[:2])
        asked: list[int] = []

        def two_farthest(codes: shortlist.Codes, vector: Any, depth: int, dead: Any = None) -> Any:
            asked.append(depth)
            return farthest

        monkeypatch.setattr(shortlist, "shortlist", two_farthest)
        revision, ranked = vector_inprocess.rank_memory("small", embedding.MODEL_ID, query, 3)
        assert revision == refreshed.revision
        assert asked == [shortlist.MIN_DEPTH]
        best_first = farthest[np.argsort(-cosines[farthest], kind="stable")]
        assert [pk for pk, _ in ranked] == refreshed.membership_ids[best_first].tolist()
        assert [round(score, 5) for _, score in ranked] == [
            round(max(0.0, float(cosines[i])), 5) for i in best_first
        ]
