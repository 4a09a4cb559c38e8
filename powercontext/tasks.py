"""Celery tasks: thin, idempotent wrappers around the search index services.

They take plain values, re-read authoritative rows, and return counts only (never scope ids,
entry ids or text), so a result backend or a worker log cannot leak content.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import OperationalError

from powercontext import search

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
