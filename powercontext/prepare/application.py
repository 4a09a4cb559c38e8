"""The scoped Context application: one prepare per agent turn.

One statement reads everything a prepare needs: the Memory candidates of the scope's current
head (with that head's revision, so every hit cites the revision the statement saw; a head
committed meanwhile cannot leak into this response) and the approved, current Experience
candidates. Typed hits then go to the pure builder. Nothing is written; the query is never
logged. With ``audit`` (the /v1 operation), the metadata of each prepare (counts and sizes of the
builder's trace, summarized by ``powercontext.prepare.explain``, never text) is buffered in process for the prepare aggregates
(``powercontext.prepare.audit``), which a background thread writes later.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime

from powercontext import search
from powercontext.core.exceptions import InvariantFailure
from powercontext.prepare import audit as prepare_audit
from powercontext.prepare import selection as context_selectors
from powercontext.prepare.builder import (
    EXPERIENCE_CANDIDATE_WINDOW,
    MEMORY_CANDIDATE_WINDOW,
    BuilderInvariantError,
    Built,
    PreparedContext,
    PreparedContextBuilder,
)
from powercontext.prepare.explain import explain, summarize
from powercontext.prepare.selection import ContextCandidates

logger = logging.getLogger("powercontext.prepare")


@dataclass(frozen=True)
class PrepareRequest:
    scope_id: str
    query: str
    max_bytes: int = 8000
    # The feedback prior's clock (None: now). The API never sets it; the replay evaluation of
    # the prior asks its questions on simulated days.
    now: datetime | None = None


class ScopedContextApplication:
    def __init__(self, builder: PreparedContextBuilder | None = None, *, audit: bool = False) -> None:
        self.builder = builder or PreparedContextBuilder()
        self.audit = audit

    def prepare(self, request: PrepareRequest) -> PreparedContext:
        """Search the scope's current Memory head and approved Experiences; build the context.

        Raises ``InvariantFailure`` (a 500, no partial content) when the builder's invariants
        fail; database errors propagate to the HTTP error mapping (503 when unreachable).
        """
        started = time.perf_counter()
        mode = search.best_mode(request.query) if self.audit else ""
        found = context_selectors.context_candidates(
            scope_id=request.scope_id,
            query=request.query,
            memory_limit=MEMORY_CANDIDATE_WINDOW,
            experience_limit=EXPERIENCE_CANDIDATE_WINDOW,
            now=request.now,
        )
        try:
            built = self.builder.build(
                memory_ref=found.memory_ref,
                memory_hits=found.memory_hits,
                experience_hits=found.experience_hits,
                max_bytes=request.max_bytes,
            )
        except BuilderInvariantError as exc:
            logger.error("prepare invariant_failure error_class=%s", type(exc).__name__)
            raise InvariantFailure() from exc
        prepared = built.context
        elapsed = time.perf_counter() - started
        logger.info(
            "prepare status=%s memory_hits=%d experience_hits=%d content_bytes=%d duration_ms=%.1f",
            prepared.status,
            len(found.memory_hits),
            len(found.experience_hits),
            prepared.content_bytes,
            elapsed * 1000,
        )
        if self.audit:
            self._record(request, mode, found, built, elapsed)
        return prepared

    @staticmethod
    def _record(
        request: PrepareRequest,
        mode: str,
        found: ContextCandidates,
        built: Built,
        elapsed: float,
    ) -> None:
        """Buffer the prepare's metadata (counted from the build's trace, no second pass); a
        failure here never fails the prepare."""
        try:
            explained = explain(
                built, memory_ref=found.memory_ref, max_bytes=request.max_bytes, dropped=found.dropped
            )
            prepare_audit.record(
                scope_id=request.scope_id,
                search_mode=mode,
                summary=summarize(explained),
                latency_seconds=elapsed,
            )
        except Exception as exc:
            logger.warning("prepare audit_failed error_class=%s", type(exc).__name__)
