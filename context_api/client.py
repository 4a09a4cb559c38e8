"""Python client for the PowerContext HTTP contract (sync and async, built on httpx).

Usage::

    with PowerContextClient("http://127.0.0.1:8000", token="...") as client:
        prepared = client.prepare_context(scope_id="git:github.com/acme/api", query="How do we deploy?")

    async with AsyncPowerContextClient("http://127.0.0.1:8000") as client:
        hits = await client.search_memory(scope_id="project:demo", query="deploy")

Conventions shared by both clients:

* Every method takes keyword arguments named after the contract fields and returns the decoded JSON
  object of the success response as a ``dict``.
* An optional argument left at ``None`` is **not sent**. For fields with a contract default
  (``max_bytes``, ``limit``, ``mode``, ``include_inactive``, ``status``) the server then applies that
  default; for the optional nullable fields (``reason``, ``expected_revision``, ``metadata``,
  ``target``, ``since_revision``, ``family``, ``cursor``) an absent field means the same as ``null``.
  Omitting keeps requests valid against servers that reject ``null`` for non-nullable fields.
  Required fields are always sent (``source_refs`` / ``artifact_refs`` default to empty lists).
* Success statuses are exact: 202 for ``capture_content_source``, 201 for ``propose_experience`` and
  ``propose_skill``, 200 for everything else. Any other outcome raises a :class:`PowerContextError`
  subclass carrying ``status``, ``code``, ``message``, ``details`` and ``request_id`` (the
  ``X-PowerContext-Request-ID`` response header).
* ``get_readiness`` returns the ``ReadinessResponse`` body for both 200 (ready/degraded) and 503
  (not ready): the contract sends a ReadinessResponse, not an error envelope, with that 503. Inspect
  ``result["status"]``. A 503 whose body is not a ReadinessResponse still raises :class:`UnavailableError`.

The request/response mapping lives in one place: each public method (defined once, in
``_Operations``) builds a :class:`PreparedRequest` from the ``OPERATIONS`` table and hands it to the
client's ``_execute``; :func:`decode_response` turns the HTTP response into a dict or an exception for
both clients.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx

__all__ = [
    "AsyncPowerContextClient",
    "AuthenticationError",
    "CapabilityNotSupportedError",
    "ConflictError",
    "InvalidRequestError",
    "NotFoundError",
    "OPERATIONS",
    "PowerContextClient",
    "PowerContextError",
    "PreparedRequest",
    "ServerError",
    "UnavailableError",
    "UnexpectedResponseError",
]

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 10.0
REQUEST_ID_HEADER = "X-PowerContext-Request-ID"
USER_AGENT = "powercontext-python-client"

JSONDict = dict[str, Any]


# --------------------------------------------------------------------------- errors


class PowerContextError(Exception):
    """Base class. ``status`` is None when no HTTP response was received."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        details: Any = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details = details
        self.request_id = request_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class AuthenticationError(PowerContextError):
    """401: a valid bearer token is required."""


class NotFoundError(PowerContextError):
    """404: the requested value does not exist (or the server predates the operation)."""


class ConflictError(PowerContextError):
    """409: the command conflicts with current state (stale version, terminal candidate, ...)."""


class InvalidRequestError(PowerContextError):
    """422: the request violates the contract."""


class CapabilityNotSupportedError(InvalidRequestError):
    """422 with code ``capability_not_supported`` (e.g. an unavailable search mode)."""


class ServerError(PowerContextError):
    """500: the server failed."""


class UnavailableError(PowerContextError):
    """503, or no response at all (connection failure, timeout)."""


class UnexpectedResponseError(PowerContextError):
    """A status the operation does not declare (including a wrong 2xx), or a body that is not a JSON object."""


_ERROR_CLASSES: dict[int, type[PowerContextError]] = {
    401: AuthenticationError,
    404: NotFoundError,
    409: ConflictError,
    422: InvalidRequestError,
    500: ServerError,
    503: UnavailableError,
}


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
    "propose_experience": Operation("POST", "/v1/experience/propose", 201),
    "get_experience": Operation("POST", "/v1/experience/get", 200),
    "propose_skill": Operation("POST", "/v1/skill/propose", 201),
    "get_skill": Operation("POST", "/v1/skill/get", 200),
    "list_artifact_candidates": Operation("POST", "/v1/artifact-candidates/list", 200),
    "get_artifact_candidate": Operation("POST", "/v1/artifact-candidates/get", 200),
    "approve_artifact_candidate": Operation("POST", "/v1/artifact-candidates/approve", 200),
    "reject_artifact_candidate": Operation("POST", "/v1/artifact-candidates/reject", 200),
    "revise_artifact_candidate": Operation("POST", "/v1/artifact-candidates/revise", 200),
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


# --------------------------------------------------------------------------- public methods (defined once)

ResultT = TypeVar("ResultT")


def _as_list(items: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    return [] if items is None else list(items)


def _proposal_body(
    scope_id: str,
    proposal: Mapping[str, Any],
    source_refs: Sequence[Mapping[str, Any]] | None,
    artifact_refs: Sequence[Mapping[str, Any]] | None,
    target: Mapping[str, Any] | None,
    reason: str | None,
) -> dict[str, Any]:
    """The body shared by propose_experience and propose_skill."""
    return {
        "scope_id": scope_id,
        "proposal": proposal,
        "source_refs": _as_list(source_refs),
        "artifact_refs": _as_list(artifact_refs),
        "target": target,
        "reason": reason,
    }


class _Operations(Generic[ResultT]):
    """The public API. ``ResultT`` is ``dict`` for the sync client and ``Awaitable[dict]`` for the async one."""

    _execute: Callable[[PreparedRequest], ResultT]

    def _call(self, name: str, fields: Mapping[str, Any] | None = None) -> ResultT:
        return self._execute(build_request(name, fields))

    # Health and capabilities ----------------------------------------------------------------

    def get_liveness(self) -> ResultT:
        return self._call("get_liveness")

    def get_readiness(self) -> ResultT:
        """ReadinessResponse for 200 *and* 503; check ``["status"]`` (ready | degraded | not_ready)."""
        return self._call("get_readiness")

    def get_capabilities(self) -> ResultT:
        return self._call("get_capabilities")

    def get_stats(self, *, scope_id: str, period: str | None = None) -> ResultT:
        return self._call("get_stats", {"scope_id": scope_id, "period": period})

    # Sources and context ----------------------------------------------------------------------

    def capture_content_source(
        self, *, scope_id: str, source_id: str, content: str, metadata: Mapping[str, Any] | None = None
    ) -> ResultT:
        return self._call(
            "capture_content_source",
            {"scope_id": scope_id, "source_id": source_id, "content": content, "metadata": metadata},
        )

    def prepare_context(self, *, scope_id: str, query: str, max_bytes: int | None = None) -> ResultT:
        return self._call("prepare_context", {"scope_id": scope_id, "query": query, "max_bytes": max_bytes})

    # Memory -----------------------------------------------------------------------------------

    def remember_memory(
        self,
        *,
        scope_id: str,
        kind: str,
        text: str,
        reason: str | None = None,
        expected_revision: int | None = None,
    ) -> ResultT:
        return self._call(
            "remember_memory",
            {
                "scope_id": scope_id,
                "kind": kind,
                "text": text,
                "reason": reason,
                "expected_revision": expected_revision,
            },
        )

    def search_memory(
        self, *, scope_id: str, query: str, limit: int | None = None, mode: str | None = None
    ) -> ResultT:
        return self._call(
            "search_memory", {"scope_id": scope_id, "query": query, "limit": limit, "mode": mode}
        )

    def list_memory_entries(self, *, scope_id: str, include_inactive: bool | None = None) -> ResultT:
        return self._call("list_memory_entries", {"scope_id": scope_id, "include_inactive": include_inactive})

    def get_memory_entry(self, *, scope_id: str, citation: Mapping[str, Any]) -> ResultT:
        return self._call("get_memory_entry", {"scope_id": scope_id, "citation": citation})

    def revise_memory_entry(
        self, *, scope_id: str, citation: Mapping[str, Any], kind: str, text: str, reason: str | None = None
    ) -> ResultT:
        return self._call(
            "revise_memory_entry",
            {"scope_id": scope_id, "citation": citation, "kind": kind, "text": text, "reason": reason},
        )

    def retire_memory_entry(
        self, *, scope_id: str, citation: Mapping[str, Any], reason: str | None = None
    ) -> ResultT:
        return self._call(
            "retire_memory_entry", {"scope_id": scope_id, "citation": citation, "reason": reason}
        )

    def list_memory_changes(self, *, scope_id: str, since_revision: int | None = None) -> ResultT:
        return self._call("list_memory_changes", {"scope_id": scope_id, "since_revision": since_revision})

    # Experience and managed Skill -------------------------------------------------------------

    def propose_experience(
        self,
        *,
        scope_id: str,
        proposal: Mapping[str, Any],
        source_refs: Sequence[Mapping[str, Any]] | None = None,
        artifact_refs: Sequence[Mapping[str, Any]] | None = None,
        target: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> ResultT:
        return self._call(
            "propose_experience",
            _proposal_body(scope_id, proposal, source_refs, artifact_refs, target, reason),
        )

    def propose_skill(
        self,
        *,
        scope_id: str,
        proposal: Mapping[str, Any],
        source_refs: Sequence[Mapping[str, Any]] | None = None,
        artifact_refs: Sequence[Mapping[str, Any]] | None = None,
        target: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> ResultT:
        return self._call(
            "propose_skill", _proposal_body(scope_id, proposal, source_refs, artifact_refs, target, reason)
        )

    def get_experience(self, *, scope_id: str, artifact: Mapping[str, Any]) -> ResultT:
        return self._call("get_experience", {"scope_id": scope_id, "artifact": artifact})

    def get_skill(self, *, scope_id: str, artifact: Mapping[str, Any]) -> ResultT:
        return self._call("get_skill", {"scope_id": scope_id, "artifact": artifact})

    # Review (Artifact Candidates) -------------------------------------------------------------

    def list_artifact_candidates(
        self,
        *,
        scope_id: str,
        status: str | None = None,
        family: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ResultT:
        return self._call(
            "list_artifact_candidates",
            {"scope_id": scope_id, "status": status, "family": family, "cursor": cursor, "limit": limit},
        )

    def get_artifact_candidate(self, *, scope_id: str, candidate_id: str) -> ResultT:
        return self._call("get_artifact_candidate", {"scope_id": scope_id, "candidate_id": candidate_id})

    def approve_artifact_candidate(
        self, *, scope_id: str, candidate_id: str, expected_version: int
    ) -> ResultT:
        return self._call(
            "approve_artifact_candidate",
            {"scope_id": scope_id, "candidate_id": candidate_id, "expected_version": expected_version},
        )

    def reject_artifact_candidate(
        self, *, scope_id: str, candidate_id: str, expected_version: int, reason: str
    ) -> ResultT:
        return self._call(
            "reject_artifact_candidate",
            {
                "scope_id": scope_id,
                "candidate_id": candidate_id,
                "expected_version": expected_version,
                "reason": reason,
            },
        )

    def revise_artifact_candidate(
        self,
        *,
        scope_id: str,
        candidate_id: str,
        expected_version: int,
        proposal: Mapping[str, Any],
        source_refs: Sequence[Mapping[str, Any]] | None = None,
        artifact_refs: Sequence[Mapping[str, Any]] | None = None,
        target: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> ResultT:
        return self._call(
            "revise_artifact_candidate",
            {
                "scope_id": scope_id,
                "candidate_id": candidate_id,
                "expected_version": expected_version,
                "proposal": proposal,
                "source_refs": _as_list(source_refs),
                "artifact_refs": _as_list(artifact_refs),
                "target": target,
                "reason": reason,
            },
        )


# --------------------------------------------------------------------------- clients


def _client_options(
    base_url: str, token: str | None, timeout: float | httpx.Timeout | None, headers: Mapping[str, str] | None
) -> dict[str, Any]:
    merged = {"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
    if token:
        merged["Authorization"] = f"Bearer {token}"
    return {
        "base_url": base_url.rstrip("/"),
        "timeout": timeout,
        "headers": merged,
        "follow_redirects": False,
    }


class PowerContextClient(_Operations[JSONDict]):
    """Blocking client. Use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        token: str | None = None,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(**_client_options(base_url, token, timeout, headers), transport=transport)

    def _execute(self, request: PreparedRequest) -> JSONDict:
        try:
            response = self._http.request(
                request.operation.method, request.operation.path, params=request.params, json=request.json
            )
        except httpx.HTTPError as error:
            raise _transport_error(request, error) from error
        return decode_response(request, response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PowerContextClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncPowerContextClient(_Operations[Awaitable[JSONDict]]):
    """Asyncio client: every method returns an awaitable. Use ``async with`` or call :meth:`aclose`."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        token: str | None = None,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            **_client_options(base_url, token, timeout, headers), transport=transport
        )

    async def _execute(self, request: PreparedRequest) -> JSONDict:
        try:
            response = await self._http.request(
                request.operation.method, request.operation.path, params=request.params, json=request.json
            )
        except httpx.HTTPError as error:
            raise _transport_error(request, error) from error
        return decode_response(request, response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncPowerContextClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
