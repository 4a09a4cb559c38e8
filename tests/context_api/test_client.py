"""PowerContextClient / AsyncPowerContextClient against a scripted local HTTP server.

Every test runs for both clients: the ``call`` fixture invokes one method on a fresh sync client or,
through ``asyncio.run``, on a fresh async client. No database, no sleeps.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from powercontext_client import (
    OPERATIONS,
    AsyncPowerContextClient,
    AuthenticationError,
    CapabilityNotSupportedError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PowerContextClient,
    PowerContextError,
    ServerError,
    UnavailableError,
    UnexpectedResponseError,
)

from tests.context_api.fake_http import FakeServer, Reply

REQUEST_ID = "5f0c2b7a9d3e4f61"

# --------------------------------------------------------------------------- fake server


@pytest.fixture
def server():
    fake = FakeServer(default_headers={"X-PowerContext-Request-ID": REQUEST_ID})
    yield fake
    fake.close()


# --------------------------------------------------------------------------- sync/async harness

Invoke = Callable[..., Any]


def _sync_call(base_url: str, method: str, client_options: dict[str, Any], **kwargs: Any) -> Any:
    with PowerContextClient(base_url, **client_options) as client:
        return getattr(client, method)(**kwargs)


def _async_call(base_url: str, method: str, client_options: dict[str, Any], **kwargs: Any) -> Any:
    async def go() -> Any:
        async with AsyncPowerContextClient(base_url, **client_options) as client:
            return await getattr(client, method)(**kwargs)

    return asyncio.run(go())


@pytest.fixture(params=["sync", "async"])
def call(request, server) -> Invoke:
    """call(method, base_url=None, client_options=None, **kwargs) -> decoded body (or raises)."""

    runner = _sync_call if request.param == "sync" else _async_call

    def invoke(
        method: str, *, base_url: str | None = None, client_options: dict | None = None, **kwargs: Any
    ):
        return runner(base_url or server.url, method, client_options or {}, **kwargs)

    return invoke


# --------------------------------------------------------------------------- operations

CITATION = {
    "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 3},
    "entry_id": "mem_ent_1",
    "entry_version_id": "mem_ver_1",
}
ARTIFACT = {"family": "experience", "artifact_id": "exp_1", "revision": 1}
EXPERIENCE = {"situation": "s", "action": "a", "outcome": "o", "lesson": "l"}
SKILL = {"name": "deploy", "description": "Deploy.", "instructions": "Run it.", "validation": ["It ran."]}
SOURCE_REFS = [{"name": "content", "source_id": "src-1"}]

# (method, kwargs, http method, path, JSON body or query dict (GET) / None, success status)
CASES: list[tuple[str, dict[str, Any], str, str, Any, int]] = [
    ("get_liveness", {}, "GET", "/health/live", None, 200),
    ("get_readiness", {}, "GET", "/health/ready", None, 200),
    ("get_capabilities", {}, "GET", "/v1/capabilities", None, 200),
    (
        "get_stats",
        {"scope_id": "s 1", "period": "7d"},
        "GET",
        "/v1/stats",
        {"scope_id": ["s 1"], "period": ["7d"]},
        200,
    ),
    ("get_stats", {"scope_id": "s"}, "GET", "/v1/stats", {"scope_id": ["s"]}, 200),
    (
        "capture_content_source",
        {"scope_id": "s", "source_id": "src-1", "content": "hello", "metadata": {"origin": "test"}},
        "POST",
        "/v1/sources/content",
        {"scope_id": "s", "source_id": "src-1", "content": "hello", "metadata": {"origin": "test"}},
        202,
    ),
    (
        "capture_content_source",
        {"scope_id": "s", "source_id": "src-1", "content": "hello"},
        "POST",
        "/v1/sources/content",
        {"scope_id": "s", "source_id": "src-1", "content": "hello"},
        202,
    ),
    (
        "prepare_context",
        {"scope_id": "s", "query": "q", "max_bytes": 8000},
        "POST",
        "/v1/context/prepare",
        {"scope_id": "s", "query": "q", "max_bytes": 8000},
        200,
    ),
    (
        "prepare_context",
        {"scope_id": "s", "query": "q"},
        "POST",
        "/v1/context/prepare",
        {"scope_id": "s", "query": "q"},
        200,
    ),
    (
        "remember_memory",
        {"scope_id": "s", "kind": "fact", "text": "t", "reason": "r", "expected_revision": 2},
        "POST",
        "/v1/memory/remember",
        {"scope_id": "s", "kind": "fact", "text": "t", "reason": "r", "expected_revision": 2},
        200,
    ),
    (
        "search_memory",
        {"scope_id": "s", "query": "q", "limit": 5, "mode": "fts"},
        "POST",
        "/v1/memory/search",
        {"scope_id": "s", "query": "q", "limit": 5, "mode": "fts"},
        200,
    ),
    (
        "list_memory_entries",
        {"scope_id": "s", "include_inactive": False},
        "POST",
        "/v1/memory/entries/list",
        {"scope_id": "s", "include_inactive": False},
        200,
    ),
    (
        "get_memory_entry",
        {"scope_id": "s", "citation": CITATION},
        "POST",
        "/v1/memory/entries/get",
        {"scope_id": "s", "citation": CITATION},
        200,
    ),
    (
        "revise_memory_entry",
        {"scope_id": "s", "citation": CITATION, "kind": "fact", "text": "t2"},
        "POST",
        "/v1/memory/entries/revise",
        {"scope_id": "s", "citation": CITATION, "kind": "fact", "text": "t2"},
        200,
    ),
    (
        "retire_memory_entry",
        {"scope_id": "s", "citation": CITATION, "reason": "obsolete"},
        "POST",
        "/v1/memory/entries/retire",
        {"scope_id": "s", "citation": CITATION, "reason": "obsolete"},
        200,
    ),
    (
        "list_memory_changes",
        {"scope_id": "s", "since_revision": 0},
        "POST",
        "/v1/memory/changes",
        {"scope_id": "s", "since_revision": 0},
        200,
    ),
    (
        "flush_memory",
        {"scope_id": "s"},
        "POST",
        "/v1/memory/flush",
        {"scope_id": "s"},
        200,
    ),
    (
        "propose_experience",
        {
            "scope_id": "s",
            "proposal": EXPERIENCE,
            "source_refs": SOURCE_REFS,
            "target": ARTIFACT,
            "reason": "why",
        },
        "POST",
        "/v1/experience/propose",
        {
            "scope_id": "s",
            "proposal": EXPERIENCE,
            "source_refs": SOURCE_REFS,
            "artifact_refs": [],
            "target": ARTIFACT,
            "reason": "why",
        },
        201,
    ),
    (
        "propose_skill",
        {"scope_id": "s", "proposal": SKILL},
        "POST",
        "/v1/skill/propose",
        {"scope_id": "s", "proposal": SKILL, "source_refs": [], "artifact_refs": []},
        201,
    ),
    (
        "get_experience",
        {"scope_id": "s", "artifact": ARTIFACT},
        "POST",
        "/v1/experience/get",
        {"scope_id": "s", "artifact": ARTIFACT},
        200,
    ),
    (
        "get_skill",
        {"scope_id": "s", "artifact": ARTIFACT},
        "POST",
        "/v1/skill/get",
        {"scope_id": "s", "artifact": ARTIFACT},
        200,
    ),
    (
        "list_artifact_candidates",
        {"scope_id": "s", "status": "approved", "family": "skill", "cursor": "c1", "limit": 10},
        "POST",
        "/v1/artifact-candidates/list",
        {"scope_id": "s", "status": "approved", "family": "skill", "cursor": "c1", "limit": 10},
        200,
    ),
    (
        "list_artifact_candidates",
        {"scope_id": "s", "family": None},
        "POST",
        "/v1/artifact-candidates/list",
        {"scope_id": "s"},
        200,
    ),
    (
        "get_artifact_candidate",
        {"scope_id": "s", "candidate_id": "cand_1"},
        "POST",
        "/v1/artifact-candidates/get",
        {"scope_id": "s", "candidate_id": "cand_1"},
        200,
    ),
    (
        "approve_artifact_candidate",
        {"scope_id": "s", "candidate_id": "cand_1", "expected_version": 2},
        "POST",
        "/v1/artifact-candidates/approve",
        {"scope_id": "s", "candidate_id": "cand_1", "expected_version": 2},
        200,
    ),
    (
        "reject_artifact_candidate",
        {"scope_id": "s", "candidate_id": "cand_1", "expected_version": 2, "reason": "dup"},
        "POST",
        "/v1/artifact-candidates/reject",
        {"scope_id": "s", "candidate_id": "cand_1", "expected_version": 2, "reason": "dup"},
        200,
    ),
    (
        "revise_artifact_candidate",
        {
            "scope_id": "s",
            "candidate_id": "cand_1",
            "expected_version": 2,
            "proposal": SKILL,
            "artifact_refs": [ARTIFACT],
        },
        "POST",
        "/v1/artifact-candidates/revise",
        {
            "scope_id": "s",
            "candidate_id": "cand_1",
            "expected_version": 2,
            "proposal": SKILL,
            "source_refs": [],
            "artifact_refs": [ARTIFACT],
        },
        200,
    ),
    (
        "request_changes_artifact_candidate",
        {
            "scope_id": "s",
            "candidate_id": "cand_1",
            "expected_version": 1,
            "comment": "c",
            "field_comments": {"action": "a"},
        },
        "POST",
        "/v1/artifact-candidates/request-changes",
        {
            "scope_id": "s",
            "candidate_id": "cand_1",
            "expected_version": 1,
            "comment": "c",
            "field_comments": {"action": "a"},
        },
        200,
    ),
    (
        "comment_artifact_candidate",
        {"scope_id": "s", "candidate_id": "cand_1", "expected_version": 1, "comment": "c"},
        "POST",
        "/v1/artifact-candidates/comment",
        {"scope_id": "s", "candidate_id": "cand_1", "expected_version": 1, "comment": "c"},
        200,
    ),
    (
        "get_artifact_candidate_thread",
        {"scope_id": "s", "candidate_id": "cand_1"},
        "POST",
        "/v1/artifact-candidates/thread",
        {"scope_id": "s", "candidate_id": "cand_1"},
        200,
    ),
    (
        "answer_artifact_candidate",
        {
            "scope_id": "s",
            "candidate_id": "cand_1",
            "expected_version": 1,
            "proposal": SKILL,
            "artifact_refs": [ARTIFACT],
        },
        "POST",
        "/v1/artifact-candidates/answer",
        {
            "scope_id": "s",
            "candidate_id": "cand_1",
            "expected_version": 1,
            "proposal": SKILL,
            "source_refs": [],
            "artifact_refs": [ARTIFACT],
        },
        201,
    ),
]

SESSION = {"scope_id": "s", "session_id": "sess"}
CASES += [
    (
        "write_session_note",
        {**SESSION, "path": "plan.md", "content": "c", "mode": "append"},
        "POST",
        "/v1/sessions/notes/write",
        {**SESSION, "path": "plan.md", "content": "c", "mode": "append"},
        200,
    ),
    (
        "read_session_note",
        {**SESSION, "path": "plan.md", "version": 2},
        "POST",
        "/v1/sessions/notes/read",
        {**SESSION, "path": "plan.md", "version": 2},
        200,
    ),
    ("list_session_notes", dict(SESSION), "POST", "/v1/sessions/notes/list", dict(SESSION), 200),
    (
        "search_session_notes",
        {**SESSION, "query": "todo", "ignore_case": True},
        "POST",
        "/v1/sessions/notes/search",
        {**SESSION, "query": "todo", "ignore_case": True},
        200,
    ),
    (
        "list_session_history",
        {**SESSION, "after_position": 4},
        "POST",
        "/v1/sessions/history/list",
        {**SESSION, "after_position": 4},
        200,
    ),
    (
        "search_session_history",
        {**SESSION, "query": "error", "limit": 5},
        "POST",
        "/v1/sessions/history/search",
        {**SESSION, "query": "error", "limit": 5},
        200,
    ),
    (
        "read_session_history",
        {**SESSION, "from_position": 3, "max_bytes": 4096},
        "POST",
        "/v1/sessions/history/read",
        {**SESSION, "from_position": 3, "max_bytes": 4096},
        200,
    ),
    ("get_recovery_hint", dict(SESSION), "POST", "/v1/sessions/hint", dict(SESSION), 200),
    (
        "report_context_feedback",
        {"scope_id": "s", "items": [{"citation": {"artifact_ref": ARTIFACT}, "outcome": "used"}]},
        "POST",
        "/v1/context/feedback",
        {"scope_id": "s", "items": [{"citation": {"artifact_ref": ARTIFACT}, "outcome": "used"}]},
        200,
    ),
]


def test_every_contract_operation_is_covered():
    assert {case[0] for case in CASES} == set(OPERATIONS)
    assert len(OPERATIONS) == 36


@pytest.mark.parametrize(
    ("method", "kwargs", "http_method", "path", "sent", "success"),
    CASES,
    ids=[f"{case[0]}-{index}" for index, case in enumerate(CASES)],
)
def test_operation_sends_contract_request_and_returns_body(
    call, server, method, kwargs, http_method, path, sent, success
):
    body = {"operation": method, "nested": {"ok": True}}
    server.respond(success, body)

    assert call(method, **kwargs) == body

    request = server.last
    assert request.method == http_method
    target = urlsplit(request.path)
    assert target.path == path
    if http_method == "GET":
        assert request.body == b""
        assert parse_qs(target.query) == (sent or {})
    else:
        assert target.query == ""
        assert request.headers.get("Content-Type") == "application/json"
        assert request.json() == sent
    assert request.headers.get("Authorization") is None


@pytest.mark.parametrize(
    ("method", "kwargs", "declared"),
    [
        ("capture_content_source", {"scope_id": "s", "source_id": "x", "content": "c"}, 202),
        ("propose_experience", {"scope_id": "s", "proposal": EXPERIENCE}, 201),
        ("propose_skill", {"scope_id": "s", "proposal": SKILL}, 201),
        ("prepare_context", {"scope_id": "s", "query": "q"}, 200),
        ("get_capabilities", {}, 200),
    ],
)
@pytest.mark.parametrize("actual", [200, 201, 202])
def test_success_statuses_are_exact(call, server, method, kwargs, declared, actual):
    server.respond(actual, {"status": "accepted"})
    if actual == declared:
        assert call(method, **kwargs) == {"status": "accepted"}
        return
    with pytest.raises(UnexpectedResponseError) as caught:
        call(method, **kwargs)
    assert caught.value.status == actual
    assert caught.value.request_id == REQUEST_ID


def test_bearer_token_and_base_url_prefix(call, server):
    server.respond(200, {"status": "ok"})
    result = call("get_liveness", base_url=server.url + "/powercontext/", client_options={"token": "tok-123"})

    assert result == {"status": "ok"}
    assert server.last.path == "/powercontext/health/live"
    assert server.last.headers.get("Authorization") == "Bearer tok-123"


# --------------------------------------------------------------------------- error mapping


def envelope(code: str, message: str = "something went wrong", details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


ERRORS = [
    (401, envelope("unauthorized", "A valid bearer token is required."), AuthenticationError),
    (404, envelope("candidate_not_found"), NotFoundError),
    (
        409,
        envelope("candidate_conflict", details={"expected_version": 1, "current_version": 2}),
        ConflictError,
    ),
    (422, envelope("invalid_request", details={"errors": [{"loc": ["query"]}]}), InvalidRequestError),
    (
        422,
        envelope("capability_not_supported", details={"capability": "vector"}),
        CapabilityNotSupportedError,
    ),
    (500, envelope("internal_error"), ServerError),
    (503, envelope("runtime_not_ready"), UnavailableError),
    (400, envelope("bad_request"), UnexpectedResponseError),
    (418, envelope("teapot"), UnexpectedResponseError),
]


@pytest.mark.parametrize(
    ("status", "payload", "error_class"), ERRORS, ids=[f"{e[0]}-{e[1]['error']['code']}" for e in ERRORS]
)
def test_error_envelopes_map_to_typed_errors(call, server, status, payload, error_class):
    server.respond(status, payload)
    with pytest.raises(error_class) as caught:
        call("search_memory", scope_id="s", query="q")

    error = caught.value
    assert type(error) is error_class
    assert isinstance(error, PowerContextError)
    assert error.status == status
    assert error.code == payload["error"]["code"]
    assert error.message == payload["error"]["message"]
    assert str(error) == payload["error"]["message"]
    assert error.details == payload["error"]["details"]
    assert error.request_id == REQUEST_ID


def test_capability_error_is_an_invalid_request_error():
    assert issubclass(CapabilityNotSupportedError, InvalidRequestError)


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (401, AuthenticationError),
        (404, NotFoundError),
        (500, ServerError),
        (502, UnexpectedResponseError),
        (503, UnavailableError),
    ],
)
def test_error_status_without_an_envelope_still_maps(call, server, status, error_class):
    server.respond(status, raw=b"<html>proxy error</html>", content_type="text/html")
    with pytest.raises(error_class) as caught:
        call("prepare_context", scope_id="s", query="q")

    assert caught.value.status == status
    assert caught.value.code is None
    assert caught.value.details is None
    assert caught.value.request_id == REQUEST_ID
    assert "prepare_context" in caught.value.message


@pytest.mark.parametrize(
    "raw",
    [b"not json", b"[1, 2]", b'"text"', b"", b"\xff\xfe"],
    ids=["garbage", "array", "string", "empty", "not_utf8"],
)
def test_success_status_with_non_object_body_is_unexpected(call, server, raw):
    server.respond(200, raw=raw)
    with pytest.raises(UnexpectedResponseError) as caught:
        call("get_capabilities")

    assert caught.value.status == 200
    assert caught.value.request_id == REQUEST_ID


def test_redirects_are_not_followed(call, server):
    server.reply = Reply(307, b"", {"Location": "/elsewhere"})
    with pytest.raises(UnexpectedResponseError) as caught:
        call("get_liveness")

    assert caught.value.status == 307
    assert len(server.requests) == 1


def test_server_down_raises_unavailable(call):
    with socket.socket() as bound_not_listening:
        bound_not_listening.bind(("127.0.0.1", 0))
        port = bound_not_listening.getsockname()[1]
        with pytest.raises(UnavailableError) as caught:
            call("get_liveness", base_url=f"http://127.0.0.1:{port}")

    assert caught.value.status is None
    assert caught.value.request_id is None


def test_timeout_raises_unavailable(call, server):
    server.respond(200, {"status": "ok"}, hold=True)  # released only at teardown
    with pytest.raises(UnavailableError) as caught:
        call("prepare_context", scope_id="s", query="q", client_options={"timeout": 0.3})

    assert caught.value.status is None
    assert "timed out" in caught.value.message


# --------------------------------------------------------------------------- readiness


@pytest.mark.parametrize(
    ("status", "payload"),
    [
        (200, {"status": "ready", "checks": {"database": "ok"}}),
        (200, {"status": "degraded", "checks": {"database": "ok", "search": "fts_only"}}),
        (503, {"status": "not_ready", "checks": {"database": "unreachable"}}),
    ],
)
def test_readiness_returns_the_body_for_200_and_503(call, server, status, payload):
    server.respond(status, payload)
    assert call("get_readiness") == payload


@pytest.mark.parametrize(
    "raw",
    [json.dumps(envelope("runtime_not_ready")).encode(), b"Service Unavailable"],
    ids=["envelope", "text"],
)
def test_readiness_503_without_a_readiness_body_raises(call, server, raw):
    server.respond(503, raw=raw)
    with pytest.raises(UnavailableError) as caught:
        call("get_readiness")

    assert caught.value.status == 503


def test_other_operations_do_not_return_503_bodies(call, server):
    server.respond(503, {"status": "not_ready", "checks": {}})
    with pytest.raises(UnavailableError):
        call("get_liveness")
