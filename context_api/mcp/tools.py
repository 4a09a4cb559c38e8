"""The MCP tool projection of the operation table.

Every contract operation is a tool of the same name, except ``prepare_context`` (RFC 0028: the
prepared context is delivered by the provider hook before the turn, never chosen by the model),
the reviewer operations (approve / reject / revise / request changes / comment: a human decides
in the Review Inbox, never an agent through MCP) and the operator operations (``flush_memory``: it runs the
background pipeline). So every listed tool is one an agent token may call (within its scopes):
the list never offers a tool its role is refused. A call authorizes and runs the operation
exactly as the REST view does (``Operation.authorize`` then ``Operation.call``); any error the
REST API would answer with an envelope becomes a tool result with ``isError`` and that envelope
as structured content.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import mcp.types as types

from context_api.errors import error_parts
from context_api.mcp import schema
from context_api.operations import OPERATIONS, Operation

# Never tools, whatever the operation table grows into. ``flush_memory`` is an operator control
# (it runs the background pipeline, possibly calling a model provider), not an agent's tool.
EXCLUDED = frozenset({"prepare_context", "flush_memory"})


def _exposed(op: Operation) -> bool:
    return not op.reviewer and not op.operator and op.operation_id not in EXCLUDED


TOOL_OPERATIONS: dict[str, Operation] = {name: op for name, op in OPERATIONS.items() if _exposed(op)}


def _annotations(op: Operation) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        read_only_hint=op.read_only,
        destructive_hint=op.destructive if not op.read_only else None,
        idempotent_hint=op.idempotent,
        open_world_hint=False,
    )


@cache
def tools() -> tuple[types.Tool, ...]:
    return tuple(
        types.Tool(
            name=op.operation_id,
            description=op.summary or None,
            input_schema=schema.input_schema(op.operation_id),
            output_schema=schema.output_schema(op.operation_id),
            annotations=_annotations(op),
        )
        for op in TOOL_OPERATIONS.values()
    )


def _result(body: dict[str, Any], *, is_error: bool) -> types.CallToolResult:
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=body, is_error=is_error
    )


def call_tool(request: Any, op: Operation, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Run one tool for ``request``'s caller. Never raises for a domain or server error."""
    try:
        caller = op.authorize(request)
        body = op.call(caller, arguments if arguments is not None else {})
    except Exception as exc:
        _status, envelope, _headers = error_parts(exc)
        return _result(envelope, is_error=True)
    return _result(body, is_error=False)
