"""Hybrid search: weighted reciprocal-rank fusion of the full-text and vector rankings, and the
search modes (``fts``, ``vector``, ``hybrid``; ``auto`` = ``best_mode``).

``hybrid`` is reciprocal-rank fusion of the ``fts`` and ``vector`` rankings of one head (read
again, up to three times, while a write moves the head between them). Experience fuses its
full-text and vector rankings the same way, for search and prepare alike; prepare's Memory
window is ranked by ``rerank`` over the same two rankings (``one_head_rankings``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from powercontext.core.hits import ExperienceHit, MemoryHit
from powercontext.search.fulltext.queries import search_context, search_context_counted, search_memory
from powercontext.search.vectors import embedding
from powercontext.search.vectors.queries import vector_search_experience, vector_search_memory, vector_state
from powercontext.search.vectors.vector_inprocess import ScopeState

FTS_MODES = ("auto", "fts")
VECTOR_MODES = ("vector", "hybrid")
ALL_MODES = (*FTS_MODES, *VECTOR_MODES)
# Reciprocal-rank fusion, tuned on the LoCoMo dev file (docs/retrieval.md): a small k lets the
# first ranks of either list dominate; the vector ranking weighs a little less than full text.
RRF_K = 5
FTS_WEIGHT = 1.0
VECTOR_WEIGHT = 0.8
FUSION_DEPTH = 50  # candidates taken from each ranking before fusion (docs/retrieval.md)


def available_modes() -> tuple[str, ...]:
    """The search modes this process can serve now (vector modes need the model)."""
    return ALL_MODES if embedding.embedder() is not None else FTS_MODES


def best_mode(query: str | None = None) -> str:
    """What ``auto`` means: hybrid when the model is available (and reads ``query``, when given:
    ``embedding.reads``), else fts."""
    model = embedding.embedder() if query is None else embedding.embedder_for(query)
    return "hybrid" if model is not None else "fts"


def _fused_order(rankings: Sequence[tuple[float, Sequence[int]]], limit: int) -> list[tuple[int, float]]:
    """Weighted reciprocal-rank fusion of (weight, ranked keys) pairs: score = sum of
    weight / (RRF_K + rank) over the rankings a key is in, scaled into (0, 1]; ties by key."""
    fused: dict[int, float] = {}
    for weight, ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + weight / (RRF_K + rank)
    best = sum(weight for weight, _ in rankings) / (RRF_K + 1)
    order = sorted(fused, key=lambda key: (-fused[key], key))[:limit]
    return [(key, min(1.0, fused[key] / best)) for key in order]


def fuse(rankings: Sequence[tuple[float, Sequence[MemoryHit]]], limit: int) -> list[MemoryHit]:
    """Weighted reciprocal-rank fusion of Memory rankings (``_fused_order``, keyed by membership
    id); each row carries the channels that found it."""
    rows: dict[int, MemoryHit] = {}
    channels: dict[int, list[str]] = {}
    for _, ranking in rankings:
        for row in ranking:
            rows.setdefault(row.key, row)
            seen = channels.setdefault(row.key, [])
            seen.extend(channel for channel in row.matched_by if channel not in seen)
    order = _fused_order([(weight, [row.key for row in ranking]) for weight, ranking in rankings], limit)
    return [replace(rows[pk], score=score, matched_by=tuple(sorted(channels[pk]))) for pk, score in order]


def fuse_experience(
    rankings: Sequence[tuple[float, Sequence[ExperienceHit]]], limit: int
) -> list[ExperienceHit]:
    """The same fusion over Experience rankings, keyed by head pk."""
    rows: dict[int, ExperienceHit] = {}
    for _, ranking in rankings:
        for row in ranking:
            rows.setdefault(row.key, row)
    order = _fused_order([(weight, [row.key for row in ranking]) for weight, ranking in rankings], limit)
    return [replace(rows[pk], score=score) for pk, score in order]


def _hybrid(
    scope_id: str, query: str, limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    depth = max(limit, FUSION_DEPTH)
    for _ in range(3):
        lexical, experience = (
            search_context(scope_id, query, memory_limit=depth, experience_limit=experience_limit)
            if experience_limit
            else (search_memory(scope_id, query, depth), [])
        )
        semantic = vector_search_memory(scope_id, query, depth)
        revisions = {row.revision for row in (*lexical, *semantic)}
        if len(revisions) <= 1:
            return fuse([(FTS_WEIGHT, lexical), (VECTOR_WEIGHT, semantic)], limit), experience
    return lexical[:limit], experience  # the head kept moving: lexical alone is consistent


def _hybrid_context(
    scope_id: str, query: str, limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    """Both windows by fusion; the Experience full-text ranking is read to ``FUSION_DEPTH``."""
    depth = max(limit, FUSION_DEPTH)
    lexical, semantic, experience, _ = one_head_rankings(scope_id, query, depth, depth, experience_limit)
    # The head kept moving (no semantic ranking): lexical alone is consistent.
    memory = (
        fuse([(FTS_WEIGHT, lexical), (VECTOR_WEIGHT, semantic)], limit)
        if semantic is not None
        else lexical[:limit]
    )
    return memory, experience


def one_head_rankings(
    scope_id: str, query: str, lexical_depth: int, vector_depth: int, experience_limit: int
) -> tuple[list[MemoryHit], list[MemoryHit] | None, list[ExperienceHit], dict[str, int] | None]:
    """Memory's full-text and vector rankings read from one head (up to three tries; the vector
    ranking is None when the head kept moving), the Experience window fused, and the query
    terms' Memory document frequencies at the full-text ranking's head where its statement
    counted them (``search_context_counted``)."""
    experience_depth = max(experience_limit, FUSION_DEPTH)
    # Both families' vector freshness in one statement, read on the first try before the Memory
    # ranking: the Experience key it holds serves the Experience ranking below (which read it
    # itself a moment later before), and its Memory head tells the full-text ranking whether its
    # cached figures are the head's (after a write they are counted before ranking, not after
    # a first ranking with the old ones); a retry reads the Memory head again.
    first: ScopeState | None = None
    for attempt in range(3):
        state = vector_state(scope_id) if attempt == 0 else None
        lexical, experience, counted = search_context_counted(
            scope_id,
            query,
            memory_limit=lexical_depth,
            experience_limit=experience_depth,
            head_revision=state.revision if state is not None else None,
        )
        first = first or state
        semantic = vector_search_memory(scope_id, query, vector_depth, state)
        consistent = len({row.revision for row in (*lexical, *semantic)}) <= 1
        if consistent:
            break
    experience = fuse_experience(
        [
            (FTS_WEIGHT, experience),
            (VECTOR_WEIGHT, vector_search_experience(scope_id, query, experience_depth, first)),
        ],
        experience_limit,
    )
    return lexical, semantic if consistent else None, experience, counted


def hybrid_search_memory(scope_id: str, query: str, limit: int) -> list[MemoryHit]:
    return _hybrid(scope_id, query, limit, 0)[0]


def hybrid_search_context(
    scope_id: str, query: str, *, memory_limit: int, experience_limit: int
) -> tuple[list[MemoryHit], list[ExperienceHit]]:
    """``search_context`` with both windows ranked by hybrid fusion (Memory and Experience each
    fuse their full-text and vector rankings)."""
    return _hybrid_context(scope_id, query, memory_limit, experience_limit)


def search_memory_mode(scope_id: str, query: str, limit: int, mode: str) -> tuple[str, list[MemoryHit]]:
    """Search in ``mode`` (``auto`` = ``best_mode(query)``); returns the mode used and the rows.
    The caller checks that ``mode`` is available."""
    resolved = best_mode(query) if mode == "auto" else mode
    if resolved == "vector":
        return resolved, vector_search_memory(scope_id, query, limit)
    if resolved == "hybrid":
        return resolved, hybrid_search_memory(scope_id, query, limit)
    return "fts", search_memory(scope_id, query, limit)
