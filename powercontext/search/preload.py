"""Filling a fresh web worker's per-scope caches before it accepts requests (issue 19: the first
prepare after a worker starts is as fast as the rest).

``powercontext/warmup.py`` chooses the most recently active scopes; for each, ``preload_scope``
makes the reads a first prepare of that scope would make, through the same functions, so their
results land in the same caches under the same keys: the Memory vector matrix and Experience
rows (``vector_inprocess``; only while they fit in what is left of
``POWERCONTEXT_VECTOR_CACHE_MB``), the head's membership order (``rerank_state``), the scope's index
totals (``bm25.scope_figures``) and, on PostgreSQL, its BM25 figures (``bm25.memory_statistics``).
Every one of those caches
is keyed by what a write changes (the head revision, the largest vector id, the set of Experience
vector ids, the head the figures were counted at), so a write after the preload is read by the
next prepare exactly as after a prepare that filled them: a preloaded entry is never served stale.

``preload_scopes`` stops after its scopes or at its time limit, whichever comes first; a scope
whose reads fail is logged (the error's type only, never a scope id) and skipped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import connection

from powercontext.core.models import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, Artifact
from powercontext.search.fulltext import bm25
from powercontext.search.fulltext.indexes import MEMORY_INDEX
from powercontext.search.ranking import rerank_state
from powercontext.search.vectors import embedding, vector_cache, vector_inprocess

logger = logging.getLogger("powercontext.search")


@dataclass(frozen=True)
class PreloadReport:
    scopes: int  # scopes whose caches were filled
    with_vectors: int  # of them, those whose vectors were read too
    failed: int  # scopes whose reads raised (logged, skipped)
    timed_out: bool  # the time limit ended it before every scope was read
    seconds: float


def _head_revision(scope_id: str) -> int | None:
    return (
        Artifact.objects.filter(scope_id=scope_id, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)
        .values_list("current_revision", flat=True)
        .first()
    )


def preload_scope(scope_id: str) -> bool | None:
    """Fill this process's caches for one scope, as its first prepare would: True with its vectors,
    False without them (no model, or they would not fit in the vector cache's room left), None
    when the scope has no Memory head (nothing to read)."""
    revision = _head_revision(scope_id)
    if not revision:
        return None
    model = embedding.embedder()
    room = vector_cache.cache_bound_bytes() - vector_cache.cache_stats()["bytes"]
    with_vectors = model is not None and vector_inprocess.preload(scope_id, model.model_id, room)
    rerank_state.head(scope_id, revision)
    bm25.scope_figures(MEMORY_INDEX, scope_id, [], revision)
    if connection.vendor == "postgresql":
        bm25.memory_statistics(scope_id)
    return with_vectors


def preload_scopes(
    scope_ids: Iterable[str], max_seconds: float, clock: Callable[[], float] = time.monotonic
) -> PreloadReport:
    """``preload_scope`` for each scope in turn (most wanted first) until the list or
    ``max_seconds`` runs out; a scope already started is finished."""
    started = clock()
    filled = with_vectors = failed = 0
    timed_out = False
    for scope_id in scope_ids:
        if clock() - started >= max_seconds:
            timed_out = True
            break
        try:
            loaded = preload_scope(scope_id)
        except Exception as exc:  # a warm-up never stops the worker
            failed += 1
            logger.warning("worker warm-up: preloading a scope failed (%s)", type(exc).__name__)
            continue
        if loaded is not None:
            filled += 1
            with_vectors += int(loaded)
    return PreloadReport(filled, with_vectors, failed, timed_out, round(clock() - started, 3))
