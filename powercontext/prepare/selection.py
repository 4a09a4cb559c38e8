"""The prepare path's one read: Memory and approved-Experience candidates in one statement.

Search returns the builder's own hit types (``powercontext.core.hits``), so selection passes them on
as they are: no copy into another shape."""

from __future__ import annotations

from dataclasses import dataclass, field

from powercontext import search
from powercontext.core.families import MEMORY_ARTIFACT_ID, Family
from powercontext.prepare.builder import (
    EXPERIENCE_FAMILY,
    MEMORY_FAMILY,
    ArtifactRef,
    Decision,
    ExperienceHit,
    MemoryHit,
    window,
)


@dataclass(frozen=True)
class ContextCandidates:
    """What the builder needs: the head the Memory hits cite (None: no Memory hit) and the
    ranked hits of both sources; ``dropped``: hits selection read and did not pass on (skip
    decisions with selection's reason), so that an explanation still shows them."""

    memory_ref: ArtifactRef | None
    memory_hits: list[MemoryHit]
    experience_hits: list[ExperienceHit]
    dropped: tuple[Decision, ...] = field(default_factory=tuple)


def memory_ref(revision: int) -> ArtifactRef:
    return ArtifactRef(family=Family.MEMORY, artifact_id=MEMORY_ARTIFACT_ID, revision=revision)


def context_candidates(
    *, scope_id: str, query: str, memory_limit: int, experience_limit: int
) -> ContextCandidates:
    """Ranked Memory hits of the scope's current head (all citing one head revision) and ranked
    approved, current Experience heads.

    Both windows are ranked by the best available search mode (``search.best_mode()``: hybrid
    fusion of full text and vectors when the model is available, else full text alone, both
    windows' full text read by one statement); the builder sees the same dataclasses either
    way, so selection before the builder is all that changes.
    """
    hybrid = search.best_mode() == "hybrid"
    find = search.hybrid_search_context if hybrid else search.search_context
    memory_found, experience_found = find(
        scope_id, query, memory_limit=memory_limit, experience_limit=experience_limit
    )
    memory_hits, memory_dropped = window(MEMORY_FAMILY, memory_found, memory_limit)
    experience_hits, experience_dropped = window(EXPERIENCE_FAMILY, experience_found, experience_limit)
    return ContextCandidates(
        memory_ref=memory_hits[0].memory_ref if memory_hits else None,
        memory_hits=list(memory_hits),
        experience_hits=list(experience_hits),
        dropped=(*memory_dropped, *experience_dropped),
    )
