"""Prepare's Memory ranking (``powercontext.search.ranking.rerank``): neighbours in the head's
order, smoothing, fusion and the speaker prior give what the module docstring describes, computed
over arrays with what is kept per head revision (``rerank_state``); a write moves the head and
nothing kept for the earlier one is used. Runs on both databases."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from powercontext.core.hits import MemoryHit
from powercontext.core.models import MemoryMembership
from powercontext.memory import services as memory_services
from powercontext.memory.services import memory_remember
from powercontext.search.fulltext import analyzer, bm25, engines, language_id
from powercontext.search.fulltext.indexes import MEMORY_INDEX
from powercontext.search.ranking import fusion, relevance, rerank, rerank_state
from powercontext.search.vectors import embedding, vector_inprocess
from tests.powercontext import test_relevance_floor
from tests.powercontext.factories import citation_of

CHAT = [
    *test_relevance_floor.CHAT,
    "Ann: Which lake? Pixel would love a swim.",
    "Bob: The big one north of town; the water was cold.",
]
QUERIES = [
    "What did Ann adopt?",
    "What colour did Bob paint the kitchen?",
    "Who teaches pottery?",
    "Where did Bob go kayaking?",
    "How is the dog settling in?",
    "ceiling",
    "what is the capital of Mongolia",
]


def test_neighbours_and_smoothing_follow_the_head_order() -> None:
    head = rerank_state.Head(revision=1, ids=np.asarray([3, 5, 8, 13, 21], dtype=np.int64))

    def candidates(pool: list[int]) -> list[int]:
        slots, at = rerank._pool_and_neighbours(head, pool)
        return [int(pk) for pk in slots.ids(at)]

    assert candidates([8]) == [3, 5, 8, 13, 21]
    assert candidates([3]) == [3, 5, 8]
    assert candidates([4]) == [4]  # not active in the head: no neighbours, still a candidate
    assert candidates([21, 3]) == [3, 5, 8, 13, 21]

    slots, at = rerank._pool_and_neighbours(head, [8, 4])
    values = np.zeros((2, slots.size))
    own = {3: 1.0, 5: 2.0, 8: 4.0, 13: 8.0, 21: 16.0, 4: 32.0}
    slots.place(values[0], np.asarray(list(own)), np.asarray(list(own.values())))
    smoothed = dict(
        zip(
            slots.ids(at).tolist(),
            rerank._smoothed(values, slots, at, np.asarray([0.5, 0.2]))[0],
            strict=True,
        )
    )
    # Distance 1 counts fully, distance 2 half; an entry outside the order has no neighbours.
    assert smoothed[8] == 4.0 + 0.5 * ((2.0 + 8.0) + 0.5 * 1.0 + 0.5 * 16.0)
    assert smoothed[3] == 1.0 + 0.5 * (2.0 + 0.5 * 4.0)
    assert smoothed[4] == 32.0


def test_cosines_by_membership_id_from_a_matrix_in_any_row_order() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((4, 8)).astype(np.float32)
    query = rng.standard_normal(8).astype(np.float32)
    # A refreshed matrix appends rows, and marks the rows of memberships that left (-1).
    for rows_ids in ([2, 5, 9, 11], [5, 2, 11, 9], [-1, 2, 9, -1]):
        found = np.full(3, np.nan)
        vectors = vector_inprocess._in_room(1, 1, np.asarray(rows_ids), matrix, None)
        rerank._matrix_cosines(found, np.asarray([9, 4, 2]), vectors, query)
        assert np.isnan(found[1])  # no row: no cosine
        assert found[0] == pytest.approx(float(matrix[rows_ids.index(9)] @ query), rel=1e-5)
        assert found[2] == pytest.approx(float(matrix[rows_ids.index(2)] @ query), rel=1e-5)


def test_the_query_is_analysed_as_relevance_does() -> None:
    for query in [
        "Über café 東京タワー naïve",
        "the of and",
        "the ledger audit",
        "how are you",
        "What did Caroline research?",
        " ".join(f"w{n}" for n in range(80)),
    ]:
        words, language = analyzer.analyze(query), language_id.identify(query)
        groups = analyzer.query_groups(words, language)
        assert analyzer.forms(groups) == analyzer.query_terms(query, language)
        assert rerank._content_terms(groups, words, language) == relevance.content_terms(query)


def reference(
    scope: str, query: str, lexical: list[MemoryHit], semantic: list[MemoryHit], limit: int
) -> list[tuple[Any, ...]]:
    """The module docstring's ranking, entry by entry, read with plain queries."""
    rows = {row.key: row for row in (*semantic, *lexical)}
    revision = lexical[0].revision if lexical else semantic[0].revision
    terms = analyzer.query_terms(query, language_id.identify(query))
    figures = bm25.scope_figures(MEMORY_INDEX, scope, terms, revision)
    counted = rerank_state.index_counts(scope, list(rows), terms)
    lexical_scores = {row.key: bm25.score(figures, terms, row.text, counted.get(row.key)) for row in lexical}
    order = list(
        MemoryMembership.objects.filter(scope_id=scope, to_revision__isnull=True, state="active")
        .order_by("pk")
        .values_list("pk", flat=True)
    )

    def around(pk: int) -> list[tuple[int, float]]:
        if pk not in order:
            return []
        at = order.index(pk)
        found = [(at - 1, 1.0), (at + 1, 1.0), (at - 2, 0.5), (at + 2, 0.5)]
        return [(order[i], share) for i, share in found if 0 <= i < len(order)]

    pool = {row.key for row in (*lexical[: rerank.POOL_DEPTH], *semantic[: rerank.POOL_DEPTH])}
    candidates = pool | {pk for p in pool for pk, _ in around(p)}
    model = embedding.embedder()
    assert model is not None
    matrix = vector_inprocess.memory_vectors(scope, model.model_id)
    assert matrix is not None
    held = [i for i, pk in enumerate(matrix.membership_ids.tolist()) if pk in candidates]
    products = matrix.matrix[held] @ model.embed_query(query)  # the candidates' rows, in matrix order
    cosines = {int(matrix.membership_ids[i]): float(c) for i, c in zip(held, products, strict=True)}
    positive = {pk: max(0.0, value) for pk, value in cosines.items()}

    def smoothed(values: dict[int, float], weight: float) -> dict[int, float]:
        return {
            pk: values.get(pk, 0.0) + weight * sum(share * values.get(p, 0.0) for p, share in around(pk))
            for pk in candidates
        }

    fused: dict[int, float] = {}
    vector_ranked = 0
    for weight, scores in (
        (fusion.FTS_WEIGHT, smoothed(lexical_scores, 0.5)),
        (fusion.VECTOR_WEIGHT, smoothed(positive, 0.2)),
    ):
        ranked = sorted((pk for pk in scores if scores[pk] > 0), key=lambda pk: (-scores[pk], pk))[
            : rerank.POOL_DEPTH
        ]
        if weight == fusion.VECTOR_WEIGHT:
            vector_ranked = len(ranked)
        for rank, pk in enumerate(ranked, start=1):
            fused[pk] = fused.get(pk, 0.0) + weight / (fusion.RRF_K + rank)
    best = (fusion.FTS_WEIGHT + (fusion.VECTOR_WEIGHT if vector_ranked else 0.0)) / (fusion.RRF_K + 1)
    texts = dict(MemoryMembership.objects.filter(pk__in=list(fused)).values_list("pk", "entry_version__text"))
    words = set(analyzer.analyze(query))
    scored = {
        pk: value / best + (rerank.SPEAKER_PRIOR if rerank.speaker_named(texts[pk], words) else 0.0)
        for pk, value in fused.items()
    }
    window = sorted(scored, key=lambda pk: (-scored[pk], pk))[:limit]
    weights = bm25.idf_weights(figures, relevance.content_terms(query))
    return [
        (
            pk,
            scored[pk] / (1.0 + rerank.SPEAKER_PRIOR),
            cosines.get(pk),
            relevance.lexical_share(weights, [texts[pk]]),
        )
        for pk in window
    ]


@pytest.mark.django_db
def test_the_ranking_is_the_documented_one(embeddings: Any) -> None:
    for text in CHAT:
        memory_remember(scope_id="chat", kind="conversation", text=text)
    for query in QUERIES:
        lexical, semantic, _, _ = fusion.one_head_rankings(
            "chat", query, rerank.LEXICAL_DEPTH, rerank.VECTOR_DEPTH, 0
        )
        assert semantic
        for limit in (4, 32):
            got = [
                (row.key, row.score, row.similarity, row.lexical_share)
                for row in rerank.rank_memory("chat", query, lexical, semantic, limit)
            ]
            want = reference("chat", query, lexical, semantic, limit)
            assert [row[0] for row in got] == [row[0] for row in want], query
            assert got == [pytest.approx(row) for row in want], query
        # Again with nothing kept: the first call reads all it needs, the second what it kept.
        rerank.clear_cache()
        cold = rerank.rank_memory("chat", query, lexical, semantic, 32)
        assert cold == rerank.rank_memory("chat", query, lexical, semantic, 32)
        assert [row.key for row in cold] == [
            row[0] for row in reference("chat", query, lexical, semantic, 32)
        ]


@pytest.mark.django_db
def test_a_write_moves_the_head_and_what_was_kept_for_the_earlier_one_is_not_used(embeddings: Any) -> None:
    for text in CHAT:
        memory_remember(scope_id="moved", kind="conversation", text=text)
    query = "Which lake did they swim in?"

    def ranked() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        lexical, semantic, _, _ = fusion.one_head_rankings(
            "moved", query, rerank.LEXICAL_DEPTH, rerank.VECTOR_DEPTH, 0
        )
        got = rerank.rank_memory("moved", query, lexical, semantic or [], 32)
        want = reference("moved", query, lexical, semantic or [], 32)
        return [(row.key, row.score, row.similarity, row.lexical_share) for row in got], want

    got, want = ranked()
    assert got == [pytest.approx(row) for row in want]
    revision = len(CHAT)
    kept = rerank_state.head("moved", revision)
    assert kept is not None and kept.docs and kept.frequencies  # filled by the call

    # The new last entry is a neighbour of the lake turns and shares the query's words: their
    # smoothed scores change, which only the new head's order and figures give.
    memory_remember(scope_id="moved", kind="conversation", text="Ann: We swam in the lake, it was cold.")
    got, want = ranked()
    assert got == [pytest.approx(row) for row in want]
    assert rerank_state.head("moved", revision) is None  # the head moved on


@pytest.mark.django_db
def test_the_index_rows_kept_per_head_are_bounded_and_the_ranking_stays_the_same(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for text in CHAT:
        memory_remember(scope_id="bounded", kind="conversation", text=text)
    query = "Which lake did they swim in?"

    def ranked() -> list[tuple[Any, ...]]:
        lexical, semantic, _, _ = fusion.one_head_rankings(
            "bounded", query, rerank.LEXICAL_DEPTH, rerank.VECTOR_DEPTH, 0
        )
        rows = rerank.rank_memory("bounded", query, lexical, semantic or [], 32)
        return [(row.key, row.score, row.similarity, row.lexical_share) for row in rows]

    unbounded = ranked()
    rerank.clear_cache()
    monkeypatch.setattr(rerank_state, "DOCS_KEPT", 2)
    assert ranked() == unbounded and ranked() == unbounded  # the second call with rows dropped

    kept = rerank_state.head("bounded", len(CHAT))
    assert kept is not None and len(kept.docs) == 2
    assert kept.size == (  # what ``head``, ``_keep`` and ``figures`` count, dropped rows not
        kept.ids.nbytes
        + sys.getsizeof(kept.revision)
        + sum(rerank_state._doc_size(doc) for doc in kept.docs.values())
        + sum(sys.getsizeof(term) + 100 for term in kept.frequencies)
    )


@pytest.mark.django_db
def test_each_hit_carries_its_place_in_the_head_s_order(embeddings: Any) -> None:
    """``position`` counts the head's active entries before the hit, oldest first: what the
    pack's cut reads to tell which hits were remembered next to one another."""
    mutations = [memory_remember(scope_id="placed", kind="conversation", text=text) for text in CHAT]
    query = "Which lake did they swim in?"

    def placed() -> dict[str, int | None]:
        lexical, semantic, _, _ = fusion.one_head_rankings(
            "placed", query, rerank.LEXICAL_DEPTH, rerank.VECTOR_DEPTH, 0
        )
        return {row.text: row.position for row in rerank.rank_memory("placed", query, lexical, semantic, 32)}

    before = placed()
    assert len(before) >= 3
    assert before == {text: CHAT.index(text) for text in before}
    # Retiring the first entry moves every later one a place up.
    first = mutations[0]
    memory_services.memory_retire(scope_id="placed", citation=citation_of(first, at=mutations[-1].revision))
    after = placed()
    assert CHAT[0] not in after
    assert after == {text: CHAT.index(text) - 1 for text in after}


@pytest.mark.django_db
def test_the_full_text_statement_s_document_frequencies_spare_reranking_a_statement(embeddings: Any) -> None:
    """On PostgreSQL the ranking statement counts each query term's documents to rank; prepare's
    reranking takes those counts (and the totals counted at the same head) instead of reading
    them again: the same ranking, one statement fewer. SQLite's FTS5 counts its own: none given."""
    for text in CHAT:
        memory_remember(scope_id="counted", kind="conversation", text=text)
    compared = 0
    long_prompt = (  # many tokens: the counts of every one come back
        "Ann and Bob talked about the greyhound Pixel on the sofa, the park, the yellow kitchen,"
        " the white ceiling, pottery classes downtown, kayaking on the lake and a zeppelin"
    )
    for query in [*QUERIES, "Did Ann ever ride a zeppelin?", long_prompt]:
        lexical, semantic, _, counted = fusion.one_head_rankings(
            "counted", query, rerank.LEXICAL_DEPTH, rerank.VECTOR_DEPTH, 0
        )
        if connection.vendor != "postgresql" or not lexical:
            assert counted is None, query
            continue
        terms = analyzer.query_terms(query, language_id.identify(query))
        assert counted is not None and list(counted) == terms, query
        assert counted == bm25.scope_figures(MEMORY_INDEX, "counted", terms).frequencies, query
        assert query != long_prompt or len(terms) > 8
        if "zeppelin" in query:  # a word no entry holds counts 0 (the statement leaves it out)
            assert counted[analyzer.index_term("zeppelin")] == 0
        rerank.clear_cache()
        with CaptureQueriesContext(connection) as given:
            taken = rerank.rank_memory("counted", query, lexical, semantic or [], 32, counted)
        rerank.clear_cache()
        with CaptureQueriesContext(connection) as read:
            counted_again = rerank.rank_memory("counted", query, lexical, semantic or [], 32)
        assert taken == counted_again, query
        assert len(given.captured_queries) == len(read.captured_queries) - 1, query
        compared += 1
    assert compared >= 5 or connection.vendor != "postgresql"


def _active_ids(scope: str) -> list[int]:
    return list(
        MemoryMembership.objects.filter(scope_id=scope, to_revision__isnull=True, state="active")
        .order_by("pk")
        .values_list("pk", flat=True)
    )


@pytest.mark.django_db
def test_a_moved_head_is_read_by_its_changes_and_equals_a_whole_read() -> None:
    notes = [
        memory_remember(scope_id="delta", kind="note", text=f"note {n} about the lake") for n in range(8)
    ]
    first = rerank_state.head("delta", notes[-1].revision)
    assert first is not None and first.ids.tolist() == _active_ids("delta")
    staying, leaving = int(first.ids[0]), int(first.ids[2])
    first.docs.update({staying: (3, "kept"), leaving: (3, "dropped")})

    retired = memory_services.memory_retire(
        scope_id="delta", citation=citation_of(notes[2], at=notes[-1].revision)
    )
    revised = memory_services.memory_revise(
        scope_id="delta",
        citation=citation_of(notes[4], at=retired.revision),
        kind="note",
        text="the lake froze",
    )
    added = memory_remember(scope_id="delta", kind="note", text="a new note about the lake")
    assert added.revision > revised.revision
    with CaptureQueriesContext(connection) as queries:
        moved = rerank_state.head("delta", added.revision)
    assert moved is not None and len(queries) == 1  # the changes, not the whole head
    assert moved.ids.tolist() == _active_ids("delta") and len(moved.ids) == 8
    assert moved.docs == {staying: (3, "kept")}  # a closed membership's index row is not kept
    assert rerank_state.head("delta", added.revision) is moved

    # Totals that disagree with the changes read (a drifted index): the whole head is read.
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {engines.TOTALS} SET documents = documents + 1 WHERE scope_id = 'delta'")
    again = memory_remember(scope_id="delta", kind="note", text="one more note about the lake")
    with CaptureQueriesContext(connection) as queries:
        whole = rerank_state.head("delta", again.revision)
    assert whole is not None and len(queries) == 2 and whole.ids.tolist() == _active_ids("delta")
    assert rerank_state.head("delta", again.revision - 1) is None  # an earlier head: gone
