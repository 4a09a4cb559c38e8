"""Celery tasks of feedback: thin, idempotent wrappers around its services (counts only in their
results, never a scope id or a citation)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from powercontext.celery import TASK_OPTIONS
from powercontext.feedback import services


@shared_task(name="powercontext.rebuild_feedback_counters", **TASK_OPTIONS)
def rebuild_feedback_counters(scope_id: str | None = None) -> dict[str, Any]:
    """Rebuild the feedback counters of one scope (or all) from the feedback log. Idempotent."""
    return {"rebuilt_counters": services.counters_rebuild_all(scope_id=scope_id)}


@shared_task(name="powercontext.verify_feedback_counters", **TASK_OPTIONS)
def verify_feedback_counters(scope_id: str | None = None, repair: bool = False) -> dict[str, Any]:
    """Report drift between the counters and the log; rebuild drifted scopes on request."""
    return services.counters_verify_all(scope_id=scope_id, repair=repair).as_dict()
