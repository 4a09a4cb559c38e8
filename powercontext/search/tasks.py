"""Celery tasks of search (derived indexes): thin, idempotent wrappers around its services.

They take plain values, re-read authoritative rows, and return counts only (never scope ids,
entry ids or text), so a worker log cannot leak content.
"""

from __future__ import annotations

import threading
from typing import Any

from celery import shared_task

from powercontext.celery import TASK_OPTIONS
from powercontext.core import broker
from powercontext.search import rebuild
from powercontext.search.locking import maintenance_lock
from powercontext.search.vectors import embedding, pending, vector_index

_replaced_other_model = threading.Event()


@shared_task(name="powercontext.rebuild_search_index", **TASK_OPTIONS)
def rebuild_search_index(scope_id: str | None = None) -> dict[str, Any]:
    """Rebuild the derived index of one scope (or all) from authoritative rows. Idempotent."""
    with maintenance_lock():  # a concurrent rebuild or verify waits
        written = rebuild.rebuild_index(scope_id=scope_id)
    return {"rebuilt_rows": written}


@shared_task(name="powercontext.verify_search_index", **TASK_OPTIONS)
def verify_search_index(scope_id: str | None = None, repair: bool = False) -> dict[str, Any]:
    """Report drift between the index and authoritative rows; rebuild drifted scopes on request."""
    with maintenance_lock():
        return rebuild.verify_index(scope_id=scope_id, repair=repair).as_dict()


@shared_task(name="powercontext.embed_pending", **TASK_OPTIONS)
def embed_pending(scope_id: str) -> dict[str, Any]:
    """Embed a bounded part of the scope's missing vectors (``vectors.pending``); enqueue itself
    again while a gap remains. Idempotent: the gap is re-read from the database each run."""
    run = pending.embed_pending(scope_id, max_batches=pending.TASK_BATCHES)
    if run.remaining:
        # Bounded, never retried: with the broker down the sweep picks the scope up again.
        broker.publish(embed_pending, (scope_id,))
    return {"embedded": run.written, "remaining": run.remaining}


@shared_task(name="powercontext.embed_pending_sweep", **TASK_OPTIONS)
def embed_pending_sweep() -> dict[str, Any]:
    """Beat: enqueue ``embed_pending`` for every scope with active entries lacking a vector."""
    if embedding.embedder() is None:
        return {"scopes": 0}
    if not _replaced_other_model.is_set():  # once per worker process (a full scan of the vectors)
        pending.replace_other_model_vectors()
        _replaced_other_model.set()
    scopes = vector_index.scopes_missing_vectors()
    for scope_id in scopes:
        embed_pending.delay(scope_id)
    return {"scopes": len(scopes)}
