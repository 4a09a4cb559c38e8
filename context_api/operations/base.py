"""The operation table's building blocks: what an operation is and how any transport runs one.

An operation is a contract operation id bound to its request schema, its authorization rule, one
handler (which calls one service or selector and renders the wire body) and its success status.
REST views and the MCP tools both call ``run``: one validation, one authorization, one code path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from context_api.auth import authenticate, require_operator, require_reviewer
from context_api.validation import StrictSerializer, check_strings, validate
from powercontext.core.exceptions import InvalidRequest, ScopeForbidden
from powercontext.core.models import ApiToken


@dataclass(frozen=True)
class Caller:
    """Who is calling: the validated token (None when none was sent and none is required) and,
    for reviewer operations, the reviewing user."""

    token: ApiToken | None
    user: Any = None


Handler = Callable[[dict[str, Any], Caller], dict[str, Any]]


@dataclass(frozen=True)
class Operation:
    operation_id: str
    path: str
    input: type[StrictSerializer]
    handler: Handler
    status: int = 200
    method: str = "POST"  # GET operations take their payload from the query string
    headers: tuple[tuple[str, str], ...] = ()
    reviewer: bool = False  # approve / reject / revise: a reviewer token in every mode
    operator: bool = False  # flush: an operator or reviewer token, when one is sent
    read_only: bool = False
    idempotent: bool = False
    destructive: bool = False
    summary: str = ""

    def authorize(self, request: Any) -> Caller:
        if self.reviewer:
            reviewer = require_reviewer(request)
            return Caller(token=reviewer, user=reviewer.user)
        token = require_operator(request) if self.operator else authenticate(request)
        return Caller(token=token, user=token.user if token is not None else None)

    def call(self, caller: Caller, payload: Any) -> dict[str, Any]:
        """Validate an already-decoded payload and run the handler. Raises domain errors."""
        if not isinstance(payload, dict):
            raise InvalidRequest(
                details={
                    "errors": [
                        {"loc": ["body"], "msg": "The body must be a JSON object.", "type": "object_type"}
                    ]
                }
            )
        check_strings(payload)
        data = validate(self.input, payload)
        # A token made with --scope reaches only those scopes, on every transport.
        if (
            caller.token is not None
            and "scope_id" in data
            and not caller.token.allows_scope(data["scope_id"])
        ):
            raise ScopeForbidden()
        return self.handler(data, caller)


def operation(
    operation_id: str, path: str, input: type[StrictSerializer], **options: Any
) -> Callable[[Handler], Operation]:
    """Declare a handler as the operation ``operation_id`` served at ``path``."""

    def wrap(handler: Handler) -> Operation:
        return Operation(
            operation_id=operation_id,
            path=path,
            input=input,
            handler=handler,
            summary=(handler.__doc__ or "").strip().split("\n")[0],
            **options,
        )

    return wrap
