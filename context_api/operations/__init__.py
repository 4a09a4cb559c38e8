"""The one operation table: contract operation id -> request schema, authorization, handler,
renderer. The DRF views (``context_api.apis``) and the MCP tools serve exactly these."""

from __future__ import annotations

from context_api.operations import changes, feedback, memory, pipeline, recovery, review
from context_api.operations.base import Caller, Operation

OPERATIONS: dict[str, Operation] = {
    op.operation_id: op
    for op in (
        *memory.OPERATIONS,
        *feedback.OPERATIONS,
        *pipeline.OPERATIONS,
        *review.OPERATIONS,
        *changes.OPERATIONS,
        *recovery.OPERATIONS,
    )
}

__all__ = ["OPERATIONS", "Caller", "Operation"]
