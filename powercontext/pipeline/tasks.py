"""Celery tasks of the background pipeline: thin, idempotent wrappers around its services.

They take plain values, re-read authoritative rows, and return counts only (never scope ids,
entry ids or text), so a worker log cannot leak content.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone

from powercontext.celery import TASK_OPTIONS
from powercontext.pipeline import enqueued, runner
from powercontext.pipeline.config import pipeline_config

# Scheduled by beat (CELERY_BEAT_SCHEDULE); each job re-reads its rows, and the claim decides
# whether it runs, so a redelivered or duplicated message is harmless.


@shared_task(name="powercontext.pipeline_scan", **TASK_OPTIONS)
def pipeline_scan() -> dict[str, Any]:
    """Enqueue Phase 1 for every eligible session and Phase 2 for every scope with pipeline state."""
    plan = runner.scan()
    # Sessions whose message is still queued are not sent again (powercontext.pipeline.enqueued).
    fresh = enqueued.mark_enqueued(
        [(scope_id, session.session_id) for scope_id, session in plan.phase1],
        now=timezone.now(),
        lease_seconds=int(pipeline_config().lease.total_seconds()),
    )
    for scope_id, session_id in fresh:
        pipeline_phase1.delay(scope_id, session_id)
    for scope_id in plan.phase2:
        pipeline_phase2.delay(scope_id)
    return {
        "phase1": len(fresh),
        "phase1_already_queued": len(plan.phase1) - len(fresh),
        "phase2": len(plan.phase2),
    }


@shared_task(name="powercontext.pipeline_phase1", **TASK_OPTIONS)
def pipeline_phase1(scope_id: str, session_id: str) -> dict[str, Any]:
    """One Phase 1 job; when it changed an output, Phase 2 of the scope follows (after commit)."""
    enqueued.clear_enqueued(scope_id=scope_id, session_id=session_id)
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
