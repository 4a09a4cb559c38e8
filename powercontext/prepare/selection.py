"""The prepare path's one read: Memory and approved-Experience candidates in one statement.

Search returns the builder's own hit types (``powercontext.core.hits``), so selection passes them
on as they are: no copy into another shape. Each hit carries its relevance figures (raw
similarity, lexical share; ``powercontext.search.relevance``), and only hits at or above the
relevance floor reach the builder: an unrelated prompt gets no candidate and so the empty result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from powercontext import search
from powercontext.core.families import MEMORY_ARTIFACT_ID, Family
from powercontext.prepare.builder import (
    EXPERIENCE_FAMILY,
    MEMORY_FAMILY,
    SKIPPED,
    ArtifactRef,
    Decision,
    ExperienceHit,
    MemoryHit,
)
from powercontext.prepare.trace import BELOW_RELEVANCE_FLOOR
from powercontext.search import relevance, vectors

# Ranked deeper than the windows, so that candidates below the relevance floor make room.
RELEVANCE_DEPTH_FACTOR = 2

Hit = TypeVar("Hit", MemoryHit, ExperienceHit)


@dataclass(frozen=True)
class ContextCandidates:
    """What the builder needs: the head the Memory hits cite (None: no Memory hit) and the
    ranked hits of both sources; ``dropped``: hits selection read and did not pass on (skip
    decisions with selection's reason: below the relevance floor, or beyond the window), so
    that an explanation still shows them."""

    memory_ref: ArtifactRef | None
    memory_hits: list[MemoryHit]
    experience_hits: list[ExperienceHit]
    dropped: tuple[Decision, ...] = field(default_factory=tuple)


def memory_ref(revision: int) -> ArtifactRef:
    return ArtifactRef(family=Family.MEMORY, artifact_id=MEMORY_ARTIFACT_ID, revision=revision)


def select(source: str, hits: Sequence[Hit], limit: int) -> tuple[list[Hit], list[Decision]]:
    """The first ``limit`` hits at or above the relevance floor, in search order, and the others
    as skip decisions (``below_relevance_floor`` or ``window``), ranked after the kept ones in
    search order."""
    floor = relevance.floor()
    kept: list[Hit] = []
    dropped: list[tuple[Hit, str]] = []
    for hit in hits:
        if not floor.admits(hit.similarity, hit.lexical_share):
            dropped.append((hit, BELOW_RELEVANCE_FLOOR))
        elif len(kept) < limit:
            kept.append(hit)
        else:
            dropped.append((hit, "window"))
    decisions = [
        Decision(source, rank, hit, SKIPPED, reason=reason)
        for rank, (hit, reason) in enumerate(dropped, start=len(kept) + 1)
    ]
    return kept, decisions


def context_candidates(
    *, scope_id: str, query: str, memory_limit: int, experience_limit: int
) -> ContextCandidates:
    """Ranked Memory hits of the scope's current head (all citing one head revision) and ranked
    approved, current Experience heads, each at or above the relevance floor.

    With the embedding model (``search.best_mode() == "hybrid"``) Memory is ranked by
    ``vectors.ranked_context`` (deep full-text and vector pools, neighbour smoothing, a speaker
    prior) and Experience by fusion; without it, by full text alone (both windows read by one
    statement). Every candidate then gets its raw similarity and lexical share and the floor
    decides; the builder sees the same dataclasses either way.
    """
    hybrid = search.best_mode() == "hybrid"
    find = vectors.ranked_context if hybrid else search.search_context
    memory_found, experience_found = find(
        scope_id,
        query,
        memory_limit=memory_limit * RELEVANCE_DEPTH_FACTOR,
        experience_limit=experience_limit * RELEVANCE_DEPTH_FACTOR,
    )
    memory_found = relevance.annotate_memory(scope_id, query, memory_found)
    experience_found = relevance.annotate_experience(scope_id, query, experience_found)
    memory_hits, memory_dropped = select(MEMORY_FAMILY, memory_found, memory_limit)
    experience_hits, experience_dropped = select(EXPERIENCE_FAMILY, experience_found, experience_limit)
    return ContextCandidates(
        memory_ref=memory_hits[0].memory_ref if memory_hits else None,
        memory_hits=memory_hits,
        experience_hits=experience_hits,
        dropped=(*memory_dropped, *experience_dropped),
    )
