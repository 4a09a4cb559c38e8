"""The pipeline operation of the /v1 contract (addendum ``powercontext-pipeline.openapi.yaml``)."""

from __future__ import annotations

from typing import Any

from context_api import render
from context_api.operations.base import Caller, Operation, operation
from context_api.validation import StrictSerializer, scope_field
from powercontext.core.exceptions import CapabilityNotSupported
from powercontext.memory.selectors import memory_head_revision
from powercontext.pipeline import generators, runner
from powercontext.pipeline import selectors as pipeline_selectors


class FlushInput(StrictSerializer):
    scope_id = scope_field()


@operation("flush_memory", "v1/memory/flush", FlushInput, operator=True)
def flush_memory(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Process the pending Source window into Memory: one bounded pipeline pass for one scope,
    ignoring the idle threshold and the Phase 2 cooldown. Cursors are Source positions: the
    highest position a successful Phase 1 covered before and after the pass."""
    if not generators.enabled():
        raise CapabilityNotSupported(details={"capability": "memory_extraction"})
    scope_id = data["scope_id"]
    previous = pipeline_selectors.scope_cursor(scope_id=scope_id)
    report = runner.run_pass(scope_id=scope_id, ignore_idle=True)
    return {
        "status": "processed" if report.changed else "idle",
        "previous_cursor": previous,
        "current_cursor": pipeline_selectors.scope_cursor(scope_id=scope_id),
        "high_watermark": pipeline_selectors.scope_high_watermark(scope_id=scope_id),
        "processed_source_count": report.processed_sources,
        "memory": render.memory_ref(memory_head_revision(scope_id=scope_id) or None),
    }


OPERATIONS: tuple[Operation, ...] = (flush_memory,)
