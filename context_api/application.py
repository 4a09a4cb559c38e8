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
    BuilderInvariantError,
    PreparedContext,
    PreparedContextBuilder,
)
from powercontext.exceptions import InvariantFailure
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
        found = context_selectors.context_candidates(
            scope_id=request.scope_id,
            query=request.query,
            memory_limit=MEMORY_CANDIDATE_WINDOW,
            experience_limit=EXPERIENCE_CANDIDATE_WINDOW,
        )
        try:
            prepared = self.builder.build(
                memory_ref=found.memory_ref,
                memory_hits=found.memory_hits,
                experience_hits=found.experience_hits,
                max_bytes=request.max_bytes,
            )
        except BuilderInvariantError as exc:
            logger.error("prepare invariant_failure error_class=%s", type(exc).__name__)
            raise InvariantFailure() from exc
        logger.info(
            "prepare status=%s memory_hits=%d experience_hits=%d content_bytes=%d duration_ms=%.1f",
            prepared.status,
            len(found.memory_hits),
            len(found.experience_hits),
            prepared.content_bytes,
            (time.perf_counter() - started) * 1000,
        )
        return prepared
