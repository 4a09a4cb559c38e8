"""The client's operation table and the one request/response mapping both clients share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from powercontext_client.errors import (
    _ERROR_CLASSES,
    CapabilityNotSupportedError,
    InvalidRequestError,
    UnavailableError,
    UnexpectedResponseError,
)

REQUEST_ID_HEADER = "X-PowerContext-Request-ID"
JSONDict = dict[str, Any]


# --------------------------------------------------------------------------- operation table


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    success: int
    # Query-string operation (GET /v1/stats) instead of a JSON body.
    query_params: bool = False
    # get_readiness: a 503 also carries a ReadinessResponse that is returned, not raised.
    body_on_503: bool = False


OPERATIONS: dict[str, Operation] = {
    "get_liveness": Operation("GET", "/health/live", 200),
    "get_readiness": Operation("GET", "/health/ready", 200, body_on_503=True),
    "get_capabilities": Operation("GET", "/v1/capabilities", 200),
    "get_stats": Operation("GET", "/v1/stats", 200, query_params=True),
    "capture_content_source": Operation("POST", "/v1/sources/content", 202),
    "prepare_context": Operation("POST", "/v1/context/prepare", 200),
    "remember_memory": Operation("POST", "/v1/memory/remember", 200),
    "search_memory": Operation("POST", "/v1/memory/search", 200),
    "list_memory_entries": Operation("POST", "/v1/memory/entries/list", 200),
    "get_memory_entry": Operation("POST", "/v1/memory/entries/get", 200),
    "revise_memory_entry": Operation("POST", "/v1/memory/entries/revise", 200),
    "retire_memory_entry": Operation("POST", "/v1/memory/entries/retire", 200),
    "list_memory_changes": Operation("POST", "/v1/memory/changes", 200),
    "flush_memory": Operation("POST", "/v1/memory/flush", 200),
    "propose_experience": Operation("POST", "/v1/experience/propose", 201),
    "get_experience": Operation("POST", "/v1/experience/get", 200),
    "propose_skill": Operation("POST", "/v1/skill/propose", 201),
    "get_skill": Operation("POST", "/v1/skill/get", 200),
    "list_artifact_candidates": Operation("POST", "/v1/artifact-candidates/list", 200),
    "get_artifact_candidate": Operation("POST", "/v1/artifact-candidates/get", 200),
    "approve_artifact_candidate": Operation("POST", "/v1/artifact-candidates/approve", 200),
    "reject_artifact_candidate": Operation("POST", "/v1/artifact-candidates/reject", 200),
    "revise_artifact_candidate": Operation("POST", "/v1/artifact-candidates/revise", 200),
    "write_session_note": Operation("POST", "/v1/sessions/notes/write", 200),
    "read_session_note": Operation("POST", "/v1/sessions/notes/read", 200),
    "list_session_notes": Operation("POST", "/v1/sessions/notes/list", 200),
    "search_session_notes": Operation("POST", "/v1/sessions/notes/search", 200),
    "list_session_history": Operation("POST", "/v1/sessions/history/list", 200),
    "search_session_history": Operation("POST", "/v1/sessions/history/search", 200),
    "read_session_history": Operation("POST", "/v1/sessions/history/read", 200),
    "get_recovery_hint": Operation("POST", "/v1/sessions/hint", 200),
    "report_context_feedback": Operation("POST", "/v1/context/feedback", 200),
    "request_changes_artifact_candidate": Operation("POST", "/v1/artifact-candidates/request-changes", 200),
    "comment_artifact_candidate": Operation("POST", "/v1/artifact-candidates/comment", 200),
    "get_artifact_candidate_thread": Operation("POST", "/v1/artifact-candidates/thread", 200),
    "answer_artifact_candidate": Operation("POST", "/v1/artifact-candidates/answer", 201),
}


@dataclass(frozen=True)
class PreparedRequest:
    """Everything needed to send one operation; consumed identically by both clients."""

    name: str
    operation: Operation
    params: Mapping[str, Any] | None = None
    json: Mapping[str, Any] | None = None


def build_request(name: str, fields: Mapping[str, Any] | None = None) -> PreparedRequest:
    """Drop ``None`` values and place the fields in the query string or the JSON body."""

    operation = OPERATIONS[name]
    if fields is None:
        return PreparedRequest(name, operation)
    present = {key: value for key, value in fields.items() if value is not None}
    if operation.query_params:
        return PreparedRequest(name, operation, params=present)
    return PreparedRequest(name, operation, json=present)


def _decode_object(response: httpx.Response) -> JSONDict | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _error_fields(response: httpx.Response) -> tuple[str | None, str | None, Any]:
    """(code, message, details) from an ErrorResponse envelope, or Nones when the body is not one."""

    body = _decode_object(response)
    error = body.get("error") if body is not None else None
    if not isinstance(error, dict):
        return None, None, None
    code = error.get("code") if isinstance(error.get("code"), str) else None
    message = error.get("message") if isinstance(error.get("message"), str) else None
    return code, message, error.get("details")


def decode_response(request: PreparedRequest, response: httpx.Response) -> JSONDict:
    """Return the success body or raise the mapped :class:`PowerContextError`."""

    status = response.status_code
    request_id = response.headers.get(REQUEST_ID_HEADER)
    operation = request.operation

    if status == operation.success:
        body = _decode_object(response)
        if body is None:
            raise UnexpectedResponseError(
                f"{request.name}: HTTP {status} response is not a JSON object",
                status=status,
                request_id=request_id,
            )
        return body
    if status == 503 and operation.body_on_503:
        body = _decode_object(response)
        if body is not None and "status" in body and "error" not in body:
            return body  # ReadinessResponse with status "not_ready"
        # Anything else (an error envelope, a proxy's HTML page) gets the normal 503 mapping.

    code, message, details = _error_fields(response)
    error_class = _ERROR_CLASSES.get(status)
    if error_class is None:
        error_class = UnexpectedResponseError
        if message is None:
            message = f"{request.name}: unexpected HTTP {status} (expected {operation.success})"
    elif error_class is InvalidRequestError and code == "capability_not_supported":
        error_class = CapabilityNotSupportedError
    raise error_class(
        message if message is not None else f"{request.name}: HTTP {status}",
        status=status,
        code=code,
        details=details,
        request_id=request_id,
    )


def _transport_error(request: PreparedRequest, error: httpx.HTTPError) -> UnavailableError:
    kind = "timed out" if isinstance(error, httpx.TimeoutException) else "failed"
    return UnavailableError(f"{request.name}: request {kind}: {type(error).__name__}")
