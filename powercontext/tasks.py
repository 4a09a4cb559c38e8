"""Celery tasks: thin, idempotent wrappers around the search index and pipeline services.

They take plain values, re-read authoritative rows, and return counts only (never scope ids,
entry ids or text), so a result backend or a worker log cannot leak content.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import OperationalError

from powercontext import search
from powercontext.pipeline import runner
from powercontext.search import embedding, pending
from powercontext.services import prepare_stats

# Idempotent work: redelivered after a worker crash, retried with backoff while the database is down.
TASK_OPTIONS: dict[str, Any] = {
    "acks_late": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": True,
    "max_retries": 3,
}


@shared_task(name="powercontext.rebuild_search_index", **TASK_OPTIONS)
def rebuild_search_index(scope_id: str | None = None) -> dict[str, Any]:
    """Rebuild the derived index of one scope (or all) from authoritative rows. Idempotent."""
    written = search.rebuild_index(scope_id=scope_id)
    return {"rebuilt_rows": written}


@shared_task(name="powercontext.verify_search_index", **TASK_OPTIONS)
def verify_search_index(scope_id: str | None = None, repair: bool = False) -> dict[str, Any]:
    """Report drift between the index and authoritative rows; rebuild drifted scopes on request."""
    return search.verify_index(scope_id=scope_id, repair=repair).as_dict()


@shared_task(name="powercontext.embed_pending", **TASK_OPTIONS)
def embed_pending(scope_id: str) -> dict[str, Any]:
    """Embed a bounded part of the scope's missing vectors (``search.pending``); enqueue itself
    again while a gap remains. Idempotent: the gap is re-read from the database each run."""
    run = pending.embed_pending(scope_id, max_batches=pending.TASK_BATCHES)
    if run.remaining:
        embed_pending.delay(scope_id)
    return {"embedded": run.written, "remaining": run.remaining}


@shared_task(name="powercontext.embed_pending_sweep", **TASK_OPTIONS)
def embed_pending_sweep() -> dict[str, Any]:
    """Beat: enqueue ``embed_pending`` for every scope with active entries lacking a vector."""
    if embedding.embedder() is None:
        return {"scopes": 0}
    scopes = search.scopes_missing_vectors()
    for scope_id in scopes:
        embed_pending.delay(scope_id)
    return {"scopes": len(scopes)}


# --- the background pipeline ------------------------------------------------------------------
# Scheduled by beat (CELERY_BEAT_SCHEDULE); each job re-reads its rows, and the claim decides
# whether it runs, so a redelivered or duplicated message is harmless.


@shared_task(name="powercontext.pipeline_scan", **TASK_OPTIONS)
def pipeline_scan() -> dict[str, Any]:
    """Enqueue Phase 1 for every eligible session and Phase 2 for every scope with pipeline state."""
    plan = runner.scan()
    for scope_id, session in plan.phase1:
        pipeline_phase1.delay(scope_id, session.session_id)
    for scope_id in plan.phase2:
        pipeline_phase2.delay(scope_id)
    return {"phase1": len(plan.phase1), "phase2": len(plan.phase2)}


@shared_task(name="powercontext.pipeline_phase1", **TASK_OPTIONS)
def pipeline_phase1(scope_id: str, session_id: str) -> dict[str, Any]:
    """One Phase 1 job; when it changed an output, Phase 2 of the scope follows (after commit)."""
    committed = runner.phase1_run(scope_id=scope_id, session_id=session_id)
    if committed is not None and committed.phase2:
        pipeline_phase2.delay(scope_id)
    return {"outcome": committed.outcome if committed is not None else "not_claimed"}


@shared_task(name="powercontext.pipeline_phase2", **TASK_OPTIONS)
def pipeline_phase2(scope_id: str) -> dict[str, Any]:
    """One Phase 2 job of a scope (skipped while another holds the lease or the cooldown runs)."""
    done = runner.phase2_run(scope_id=scope_id)
    if done is None:
        return {"ran": False}
    return {
        "ran": not done.lost,
        "remembered": done.remembered,
        "retired": done.retired,
        "proposed": done.proposed,
        "rejected": done.rejected,
    }


# --- prepare aggregates -------------------------------------------------------------------------


@shared_task(name="powercontext.prune_prepare_aggregates", **TASK_OPTIONS)
def prune_prepare_aggregates(days: int | None = None) -> dict[str, Any]:
    """Delete prepare aggregates older than the retention (beat: hourly). Idempotent."""
    return {"deleted": prepare_stats.prune_expired(days=days)}
