"""/mcp driven by the official MCP Python SDK client over real HTTP against gunicorn."""

from __future__ import annotations

import json
from typing import Any

import httpx
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.types.version import LATEST_HANDSHAKE_VERSION

from review.models import Candidate
from tests.mcp.conftest import run_mcp
from tests.review.factories import (
    create_token,
    experience_proposal,
    make_approved,
    make_source,
    skill_proposal,
)

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "search_memory",
    "list_memory_entries",
    "get_memory_entry",
    "remember_memory",
    "revise_memory_entry",
    "retire_memory_entry",
    "list_memory_changes",
    "capture_content_source",
    "propose_experience",
    "propose_skill",
    "list_artifact_candidates",
    "get_artifact_candidate",
    "get_experience",
    "get_skill",
    "write_session_note",
    "read_session_note",
    "list_session_notes",
    "search_session_notes",
    "list_session_history",
    "search_session_history",
    "read_session_history",
    "get_recovery_hint",
    "report_context_feedback",
    "get_artifact_candidate_thread",
    "answer_artifact_candidate",
}
NEVER_TOOLS = {
    "prepare_context",
    "approve_artifact_candidate",
    "reject_artifact_candidate",
    "revise_artifact_candidate",
    "request_changes_artifact_candidate",
    "comment_artifact_candidate",
}


def body_of(result: types.CallToolResult) -> dict[str, Any]:
    """The structured content, checked against the one text block carrying the same JSON."""
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    assert json.loads(result.content[0].text) == result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def ok(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.structured_content
    return body_of(result)


def tool_error(result: types.CallToolResult, code: str) -> dict[str, Any]:
    assert result.is_error
    body = body_of(result)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    assert body["error"]["code"] == code, body
    return body["error"]


def citation_of(mutation: dict[str, Any]) -> dict[str, Any]:
    return dict(mutation["entry"]["citation"], memory_ref=mutation["memory"])


def test_it_initializes_and_lists_exactly_the_contract_tools(gunicorn_url: str) -> None:
    async def body(session: ClientSession) -> tuple[types.InitializeResult | None, types.ListToolsResult]:
        return session.initialize_result, await session.list_tools()

    initialized, listed = run_mcp(gunicorn_url, body)

    assert initialized is not None and initialized.protocol_version == LATEST_HANDSHAKE_VERSION
    assert initialized.server_info.name == "powercontext"
    assert initialized.capabilities.tools is not None
    by_name = {tool.name: tool for tool in listed.tools}
    assert set(by_name) == TOOLS and len(listed.tools) == 25
    assert not NEVER_TOOLS & set(by_name)
    for tool in listed.tools:
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert "scope_id" in tool.input_schema["required"]
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert "$ref" not in json.dumps(tool.input_schema) + json.dumps(tool.output_schema)
    hints = {name: tool.annotations for name, tool in by_name.items()}
    assert hints["search_memory"].read_only_hint is True
    assert hints["remember_memory"].read_only_hint is False
    assert hints["retire_memory_entry"].destructive_hint is True
    assert hints["revise_memory_entry"].destructive_hint is False
    assert hints["capture_content_source"].idempotent_hint is True
    assert hints["get_memory_entry"].idempotent_hint is True
    scope_id = by_name["remember_memory"].input_schema["properties"]["scope_id"]
    assert (scope_id["type"], scope_id["minLength"], scope_id["maxLength"]) == ("string", 1, 256)
    assert scope_id["pattern"]


def test_the_memory_tools_work_end_to_end(gunicorn_url: str) -> None:
    scope = "git:example/mcp"

    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["first"] = ok(
            await session.call_tool(
                "remember_memory", {"scope_id": scope, "kind": "note", "text": "Run the contract tests."}
            )
        )
        out["second"] = ok(
            await session.call_tool(
                "remember_memory", {"scope_id": scope, "kind": "decision", "text": "Deploy on tuesdays."}
            )
        )
        old = citation_of(out["first"])
        at_head = dict(old, memory_ref=out["second"]["memory"])
        out["search"] = ok(await session.call_tool("search_memory", {"scope_id": scope, "query": "contract"}))
        out["list"] = ok(await session.call_tool("list_memory_entries", {"scope_id": scope}))
        out["revised"] = ok(
            await session.call_tool(
                "revise_memory_entry",
                {
                    "scope_id": scope,
                    "citation": at_head,
                    "kind": "note",
                    "text": "Run the contract and unit tests.",
                },
            )
        )
        out["stale"] = await session.call_tool(
            "revise_memory_entry", {"scope_id": scope, "citation": at_head, "kind": "note", "text": "again"}
        )
        out["old_get"] = ok(await session.call_tool("get_memory_entry", {"scope_id": scope, "citation": old}))
        out["changes"] = ok(
            await session.call_tool("list_memory_changes", {"scope_id": scope, "since_revision": 0})
        )
        out["retired"] = ok(
            await session.call_tool(
                "retire_memory_entry",
                {
                    "scope_id": scope,
                    "citation": dict(citation_of(out["second"]), memory_ref=out["revised"]["memory"]),
                },
            )
        )
        out["after_retire"] = ok(
            await session.call_tool("search_memory", {"scope_id": scope, "query": "tuesdays"})
        )
        return out

    out = run_mcp(gunicorn_url, body)

    first_citation = citation_of(out["first"])
    assert [h["citation"] for h in out["search"]["hits"]] == [
        dict(first_citation, memory_ref=out["second"]["memory"])
    ]
    assert {e["text"] for e in out["list"]["entries"]} == {"Run the contract tests.", "Deploy on tuesdays."}
    assert out["revised"]["entry"]["text"] == "Run the contract and unit tests."
    assert out["revised"]["memory"]["revision"] == 3
    error = tool_error(out["stale"], "revision_conflict")
    assert error["details"] == {"expected_revision": 2, "current_revision": 3}
    # Exact get of the old citation returns the old immutable version, not the revised head.
    assert out["old_get"]["citation"] == first_citation
    assert out["old_get"]["text"] == "Run the contract tests."
    assert [r["memory_ref"]["revision"] for r in out["changes"]["revisions"]] == [1, 2, 3]
    assert out["retired"]["memory"]["revision"] == 4
    assert out["after_retire"]["hits"] == []


def test_capture_is_idempotent(gunicorn_url: str) -> None:
    args = {"scope_id": "repo", "source_id": "prompt-1", "content": "How do I run the tests?"}

    async def body(session: ClientSession) -> list[dict[str, Any]]:
        first = ok(await session.call_tool("capture_content_source", args))
        again = ok(await session.call_tool("capture_content_source", args))
        changed = await session.call_tool("capture_content_source", dict(args, content="something else"))
        return [first, again, body_of(changed) if changed.is_error else {}]

    first, again, changed = run_mcp(gunicorn_url, body)

    assert first == again and first["status"] == "accepted"
    assert changed["error"]["code"] == "source_conflict"


def test_invalid_arguments_are_tool_errors_with_the_invalid_request_envelope(gunicorn_url: str) -> None:
    async def body(session: ClientSession) -> list[types.CallToolResult]:
        return [
            await session.call_tool("search_memory", {"scope_id": "repo", "query": 42}),
            await session.call_tool("search_memory", {"scope_id": "repo", "query": "x", "shoe_size": 9}),
            await session.call_tool("search_memory", {"query": "x"}),
            await session.call_tool("list_memory_entries", None),
        ]

    wrong_type, unknown, missing, no_arguments = run_mcp(gunicorn_url, body)

    for result, loc in (
        (wrong_type, ["body", "query"]),
        (unknown, ["body", "shoe_size"]),
        (missing, ["body", "scope_id"]),
        (no_arguments, ["body", "scope_id"]),
    ):
        error = tool_error(result, "invalid_request")
        assert loc in [e["loc"] for e in error["details"]["errors"]], error


def test_not_found_is_a_tool_error(gunicorn_url: str) -> None:
    async def body(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("get_artifact_candidate", {"scope_id": "repo", "candidate_id": "nope"})

    tool_error(run_mcp(gunicorn_url, body), "candidate_not_found")


def test_the_review_tools_propose_list_and_get(gunicorn_url: str) -> None:
    source = make_source("repo")
    _experience, experience_ref = make_approved("repo", Candidate.Family.EXPERIENCE)
    _skill, skill_ref = make_approved("repo", Candidate.Family.SKILL)

    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        evidence = {"source_refs": [source], "artifact_refs": []}
        out["experience"] = ok(
            await session.call_tool(
                "propose_experience", {"scope_id": "repo", "proposal": experience_proposal(), **evidence}
            )
        )
        out["skill"] = ok(
            await session.call_tool(
                "propose_skill", {"scope_id": "repo", "proposal": skill_proposal(), **evidence}
            )
        )
        out["list"] = ok(await session.call_tool("list_artifact_candidates", {"scope_id": "repo"}))
        out["get"] = ok(
            await session.call_tool(
                "get_artifact_candidate",
                {"scope_id": "repo", "candidate_id": out["experience"]["candidate_id"]},
            )
        )
        out["get_experience"] = ok(
            await session.call_tool("get_experience", {"scope_id": "repo", "artifact": experience_ref})
        )
        out["get_skill"] = ok(
            await session.call_tool("get_skill", {"scope_id": "repo", "artifact": skill_ref})
        )
        return out

    out = run_mcp(gunicorn_url, body)

    assert out["experience"]["status"] == "pending" and out["skill"]["family"] == "skill"
    pending = {c["candidate_id"] for c in out["list"]["candidates"]}
    assert {out["experience"]["candidate_id"], out["skill"]["candidate_id"]} <= pending
    assert out["get"] == out["experience"]
    assert out["get_experience"]["artifact"] == experience_ref
    assert out["get_skill"]["artifact"] == skill_ref


def test_an_agent_token_proposes_but_nothing_it_does_through_mcp_approves(gunicorn_url: str) -> None:
    token, _lines = create_token("agent")
    source = make_source("repo")

    async def body(session: ClientSession) -> tuple[dict[str, Any], set[str], list[MCPError]]:
        proposed = ok(
            await session.call_tool(
                "propose_experience",
                {
                    "scope_id": "repo",
                    "proposal": experience_proposal(),
                    "source_refs": [source],
                    "artifact_refs": [],
                },
            )
        )
        names = {tool.name for tool in (await session.list_tools()).tools}
        refused = []
        decision = {"scope_id": "repo", "candidate_id": proposed["candidate_id"], "expected_version": 1}
        for name in ("approve_artifact_candidate", "reject_artifact_candidate", "prepare_context"):
            try:
                await session.call_tool(name, decision)
            except MCPError as exc:
                refused.append(exc)
        return proposed, names, refused

    proposed, names, refused = run_mcp(gunicorn_url, body, token=token)

    assert proposed["status"] == "pending"
    assert "approve_artifact_candidate" not in names
    assert [exc.error.code for exc in refused] == [types.INVALID_PARAMS] * 3
    candidate = Candidate.objects.get(candidate_id=proposed["candidate_id"])
    assert candidate.status == Candidate.Status.PENDING
    rest = httpx.post(
        f"{gunicorn_url}/v1/artifact-candidates/get",
        json={"scope_id": "repo", "candidate_id": proposed["candidate_id"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert rest.status_code == 200 and rest.json()["status"] == "pending"


def test_mcp_answers_at_exactly_slash_mcp_without_redirects(gunicorn_url: str) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with httpx.Client(base_url=gunicorn_url, follow_redirects=False) as client:
        direct = client.post("/mcp", json=ping)
        slash = client.post("/mcp/", json=ping)
        get = client.get("/mcp")

    assert direct.status_code == 200 and direct.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert direct.headers["content-type"].startswith("application/json")
    assert slash.status_code == 404 and "location" not in slash.headers
    assert get.status_code == 405 and get.headers["allow"] == "POST"
