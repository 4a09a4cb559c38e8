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
from typing import Any, TypeVar

import httpx

from powercontext_client.errors import (
    AuthenticationError,
    CapabilityNotSupportedError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PowerContextError,
    ServerError,
    UnavailableError,
    UnexpectedResponseError,
)
from powercontext_client.recovery import RecoveryOperations
from powercontext_client.wire import (
    OPERATIONS,
    JSONDict,
    PreparedRequest,
    _transport_error,
    build_request,
    decode_response,
)

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
USER_AGENT = "powercontext-python-client"

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


class _Operations(RecoveryOperations[ResultT]):
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

    def report_context_feedback(self, *, scope_id: str, items: Sequence[Mapping[str, Any]]) -> ResultT:
        """``items``: 1-32 of ``{"citation": <as prepare returned it>, "outcome": "used" | "wrong"
        | "outdated", "note": <optional>}``, sent as given."""
        return self._call("report_context_feedback", {"scope_id": scope_id, "items": list(items)})

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

    def flush_memory(self, *, scope_id: str) -> ResultT:
        """One bounded pipeline pass for the scope (the pipeline addendum's operator control)."""
        return self._call("flush_memory", {"scope_id": scope_id})

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

    def request_changes_artifact_candidate(
        self,
        *,
        scope_id: str,
        candidate_id: str,
        expected_version: int,
        comment: str,
        field_comments: Mapping[str, str] | None = None,
    ) -> ResultT:
        return self._call(
            "request_changes_artifact_candidate",
            {
                "scope_id": scope_id,
                "candidate_id": candidate_id,
                "expected_version": expected_version,
                "comment": comment,
                "field_comments": dict(field_comments) if field_comments is not None else None,
            },
        )

    def comment_artifact_candidate(
        self,
        *,
        scope_id: str,
        candidate_id: str,
        expected_version: int,
        comment: str,
        field_comments: Mapping[str, str] | None = None,
    ) -> ResultT:
        return self._call(
            "comment_artifact_candidate",
            {
                "scope_id": scope_id,
                "candidate_id": candidate_id,
                "expected_version": expected_version,
                "comment": comment,
                "field_comments": dict(field_comments) if field_comments is not None else None,
            },
        )

    def get_artifact_candidate_thread(self, *, scope_id: str, candidate_id: str) -> ResultT:
        return self._call(
            "get_artifact_candidate_thread", {"scope_id": scope_id, "candidate_id": candidate_id}
        )

    def answer_artifact_candidate(
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
            "answer_artifact_candidate",
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
