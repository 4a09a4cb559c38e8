"""Celery task of captured sources: the sweep that redacts again the Sources stored under an older
detector version (thin and idempotent; counts only in its result, never an id or a text)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from powercontext.celery import TASK_OPTIONS
from powercontext.memory.sources import sources_redact_stored

# One run redacts at most this many rows (20 batches of 50, one transaction each): a 200 KB
# source dense with secrets takes ~0.5 s, so a run stays far inside the task time limit. Beat
# runs it again (POWERCONTEXT_SOURCE_REDACT_SWEEP_SECONDS) until no row of an older version is left.
BATCH = 50
MAX_BATCHES = 20


# celery ships no type information: the decorator is untyped.
@shared_task(name="powercontext.redact_stale_sources", **TASK_OPTIONS)  # type: ignore[untyped-decorator]
def redact_stale_sources() -> dict[str, Any]:
    """Redact again up to ``BATCH * MAX_BATCHES`` Sources of an older ``redaction_version``."""
    result = sources_redact_stored(batch=BATCH, max_batches=MAX_BATCHES)
    return {"checked": result.checked, "changed": result.changed, "done": result.done}
