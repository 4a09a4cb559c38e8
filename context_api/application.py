"""The scoped Context application: one prepare per agent turn.

One statement reads everything a prepare needs: the Memory candidates of the scope's current
head (with that head's revision, so every hit cites the revision the statement saw; a head
committed meanwhile cannot leak into this response) and the approved, current Experience
candidates. Typed hits then go to the pure builder. Nothing is written; the query is never
logged.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from context_api.builder import (
    EXPERIENCE_CANDIDATE_WINDOW,
    MEMORY_CANDIDATE_WINDOW,
    ArtifactRef,
    BuilderInvariantError,
    ExperienceContent,
    ExperienceHit,
    MemoryHit,
    PreparedContext,
    PreparedContextBuilder,
)
from powercontext.exceptions import InvariantFailure
from powercontext.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY
from powercontext.selectors import context as context_selectors

logger = logging.getLogger("powercontext.prepare")


@dataclass(frozen=True)
class PrepareRequest:
    scope_id: str
    query: str
    max_bytes: int = 8000


class ScopedContextApplication:
    def __init__(self, builder: PreparedContextBuilder | None = None) -> None:
        self.builder = builder or PreparedContextBuilder()

    def prepare(self, request: PrepareRequest) -> PreparedContext:
        """Search the scope's current Memory head and approved Experiences; build the context.

        Raises ``InvariantFailure`` (a 500, no partial content) when the builder's invariants
        fail; database errors propagate to the HTTP error mapping (503 when unreachable).
        """
        started = time.perf_counter()
        memory, experiences = context_selectors.context_candidates(
            scope_id=request.scope_id,
            query=request.query,
            memory_limit=MEMORY_CANDIDATE_WINDOW,
            experience_limit=EXPERIENCE_CANDIDATE_WINDOW,
        )
        memory_ref = (
            ArtifactRef(family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID, revision=memory.revision)
            if memory.revision is not None
            else None
        )
        memory_hits = [
            MemoryHit(
                memory_ref=ArtifactRef(
                    family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID, revision=hit.revision
                ),
                entry_id=hit.entry_id,
                entry_version_id=hit.entry_version_id,
                text=hit.text,
                score=hit.score,
                matched_by=("fts",),
            )
            for hit in memory.hits
        ]
        experience_hits = [
            ExperienceHit(
                artifact_ref=ArtifactRef(
                    family=hit.family, artifact_id=hit.artifact_id, revision=hit.revision
                ),
                content=ExperienceContent(
                    situation=hit.situation, action=hit.action, outcome=hit.outcome, lesson=hit.lesson
                ),
            )
            for hit in experiences
        ]
        try:
            prepared = self.builder.build(
                memory_ref=memory_ref,
                memory_hits=memory_hits,
                experience_hits=experience_hits,
                max_bytes=request.max_bytes,
            )
        except BuilderInvariantError as exc:
            logger.error("prepare invariant_failure error_class=%s", type(exc).__name__)
            raise InvariantFailure() from exc
        logger.info(
            "prepare status=%s memory_hits=%d experience_hits=%d content_bytes=%d duration_ms=%.1f",
            prepared.status,
            len(memory_hits),
            len(experience_hits),
            prepared.content_bytes,
            (time.perf_counter() - started) * 1000,
        )
        return prepared
