"""Celery tasks of prepare (audit aggregates): thin, idempotent wrappers around its services.

They take plain values, re-read authoritative rows, and return counts only (never scope ids,
entry ids or text), so a worker log cannot leak content.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from powercontext.celery import TASK_OPTIONS
from powercontext.prepare import stats as prepare_stats


@shared_task(name="powercontext.prune_prepare_aggregates", **TASK_OPTIONS)
def prune_prepare_aggregates(days: int | None = None) -> dict[str, Any]:
    """Delete prepare aggregates older than the retention (beat: hourly). Idempotent."""
    return {"deleted": prepare_stats.prune_expired(days=days)}
