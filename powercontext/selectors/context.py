"""The prepare path's one read: Memory and approved-Experience candidates in one statement,
returned as the pure builder's own input dataclasses (one shape change, not three)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from context_api.builder import ArtifactRef, ExperienceHit, MemoryHit
from powercontext import search
from powercontext.families import MEMORY_ARTIFACT_ID, Family
from powercontext.search import relevance, vectors
from powercontext.selectors.experience import experience_hit


@dataclass(frozen=True)
class ContextCandidates:
    """What the builder needs: the head the Memory hits cite (None: no Memory hit) and the
    ranked hits of both sources."""

    memory_ref: ArtifactRef | None
    memory_hits: list[MemoryHit]
    experience_hits: list[ExperienceHit]
    # The search rows behind the hits, with their relevance figures (``similarity``,
    # ``lexical_share``), and the ranked candidates the relevance floor kept out (for explain).
    memory_rows: list[search.MemorySearchRow] = field(default_factory=list)
    experience_rows: list[search.ExperienceSearchRow] = field(default_factory=list)
    memory_below_floor: list[search.MemorySearchRow] = field(default_factory=list)
    experience_below_floor: list[search.ExperienceSearchRow] = field(default_factory=list)


def memory_ref(revision: int) -> ArtifactRef:
    return ArtifactRef(family=Family.MEMORY, artifact_id=MEMORY_ARTIFACT_ID, revision=revision)


def memory_hit(row: search.MemorySearchRow) -> MemoryHit:
    return MemoryHit(
        memory_ref=memory_ref(row.head_revision),
        entry_id=row.entry_id,
        entry_version_id=row.entry_version_id,
        text=row.text,
        score=row.score,
        matched_by=row.matched_by,
    )


RELEVANCE_DEPTH_FACTOR = 2


Row = TypeVar("Row", search.MemorySearchRow, search.ExperienceSearchRow)


def admitted(rows: list[Row]) -> list[Row]:
    """The annotated rows at or above the relevance floor (``search.relevance``), in order."""
    floor = relevance.floor()
    return [row for row in rows if floor.admits(row.similarity, row.lexical_share)]


def below_floor(rows: list[Row]) -> list[Row]:
    """The annotated rows the relevance floor keeps out, in order."""
    floor = relevance.floor()
    return [row for row in rows if not floor.admits(row.similarity, row.lexical_share)]


def context_candidates(
    *, scope_id: str, query: str, memory_limit: int, experience_limit: int
) -> ContextCandidates:
    """Ranked Memory hits of the scope's current head (all citing one head revision) and ranked
    approved, current Experience heads.

    Both windows are ranked by the best available search mode (``search.best_mode()``: hybrid
    fusion of full text and vectors when the model is available, else full text alone, both
    windows' full text read by one statement); the builder sees the same dataclasses either
    way, so selection before the builder is all that changes. Each candidate then gets its
    raw similarity and lexical share (``search.relevance``); only those at or above the
    relevance floor stay, so an unrelated prompt gets no candidate and an empty pack.
    """
    hybrid = search.best_mode() == "hybrid"
    find = vectors.ranked_context if hybrid else search.search_context
    # Ranked deeper than the windows: candidates below the relevance floor make room.
    memory_rows, experience_rows = find(
        scope_id,
        query,
        memory_limit=memory_limit * RELEVANCE_DEPTH_FACTOR,
        experience_limit=experience_limit * RELEVANCE_DEPTH_FACTOR,
    )
    memory_rows = relevance.annotate_memory(scope_id, query, memory_rows)
    experience_rows = relevance.annotate_experience(scope_id, query, experience_rows)
    memory_kept = admitted(memory_rows)[:memory_limit]
    experience_kept = admitted(experience_rows)[:experience_limit]
    return ContextCandidates(
        memory_ref=memory_ref(memory_kept[0].head_revision) if memory_kept else None,
        memory_hits=[memory_hit(row) for row in memory_kept],
        experience_hits=[experience_hit(row) for row in experience_kept],
        memory_rows=memory_kept,
        experience_rows=experience_kept,
        memory_below_floor=below_floor(memory_rows),
        experience_below_floor=below_floor(experience_rows),
    )
