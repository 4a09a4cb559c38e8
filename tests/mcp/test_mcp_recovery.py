"""Session recovery through the official MCP SDK client against gunicorn: an agent writes notes,
its window is reset (a new MCP session, the same ``session_id``), and it finds everything again;
scoped tokens and other sessions never see it."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from mcp import ClientSession

from powercontext.memory.sources import source_capture
from powercontext.recovery.models import RecoverySession, SessionNoteVersion
from tests.mcp.conftest import run_mcp
from tests.mcp.test_mcp_client import ok, tool_error
from tests.review.factories import create_token

pytestmark = pytest.mark.django_db(transaction=True)

SCOPE, SESSION = "git:example/mcp-recovery", "codex-run-7"
IDS = {"scope_id": SCOPE, "session_id": SESSION}


def test_notes_and_history_survive_a_window_reset(gunicorn_url: str) -> None:
    for i, text in enumerate(
        ["plan the migration", "the migration failed: lock timeout", "retry with a smaller batch"]
    ):
        source_capture(
            scope_id=SCOPE,
            source_id=f"turn-{i}",
            content=text,
            metadata={"session_id": SESSION, "window_id": "w1", "kind": "prompt"},
        )

    async def first_window(session: ClientSession) -> list[dict[str, Any]]:
        return [
            ok(
                await session.call_tool(
                    "write_session_note", {**IDS, "path": "plan.md", "content": "1. batch 500\n"}
                )
            ),
            ok(
                await session.call_tool(
                    "write_session_note",
                    {**IDS, "path": "plan.md", "content": "2. BLOCKED: lock timeout\n", "mode": "append"},
                )
            ),
            ok(
                await session.call_tool(
                    "write_session_note", {**IDS, "path": "todo/tests", "content": "run tests/db"}
                )
            ),
        ]

    written = run_mcp(gunicorn_url, first_window)
    assert [w["note"]["version"] for w in written] == [1, 2, 1]

    # The reset: a new MCP session (a new connection and Mcp-Session-Id), the same session_id.
    async def after_reset(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["hint"] = ok(await session.call_tool("get_recovery_hint", IDS))
        out["list"] = ok(await session.call_tool("list_session_notes", IDS))
        out["search"] = ok(
            await session.call_tool("search_session_notes", {**IDS, "query": "blocked", "ignore_case": True})
        )
        out["read"] = ok(await session.call_tool("read_session_note", {**IDS, "path": "plan.md"}))
        out["history"] = ok(await session.call_tool("list_session_history", IDS))
        out["history_search"] = ok(
            await session.call_tool("search_session_history", {**IDS, "query": "lock timeout"})
        )
        position = out["history_search"]["matches"][0]["position"]
        out["history_read"] = ok(
            await session.call_tool(
                "read_session_history", {**IDS, "from_position": position, "max_bytes": 256}
            )
        )
        return out

    got = run_mcp(gunicorn_url, after_reset)
    assert "- plan.md (" in got["hint"]["hint"] and "History: 3 sources" in got["hint"]["hint"]
    assert "BLOCKED" not in got["hint"]["hint"]
    assert [(n["path"], n["version"]) for n in got["list"]["notes"]] == [("plan.md", 2), ("todo/tests", 1)]
    assert [(m["path"], m["line"], m["text"]) for m in got["search"]["matches"]] == [
        ("plan.md", 2, "2. BLOCKED: lock timeout")
    ]
    assert got["read"]["content"] == "1. batch 500\n2. BLOCKED: lock timeout\n"
    assert [i["source_id"] for i in got["history"]["items"]] == ["turn-0", "turn-1", "turn-2"]
    assert [i["source_id"] for i in got["history_read"]["items"]] == ["turn-1", "turn-2"]
    assert got["history_read"]["items"][0]["content"] == "the migration failed: lock timeout"


def test_limits_and_invalid_arguments_are_tool_errors_that_write_nothing(gunicorn_url: str) -> None:
    async def body(session: ClientSession) -> list[dict[str, Any]]:
        return [
            tool_error(
                await session.call_tool(
                    "write_session_note", {**IDS, "path": "big", "content": "😀" * 16384 + "a"}
                ),
                "note_too_large",
            ),
            tool_error(
                await session.call_tool("write_session_note", {**IDS, "path": "../etc", "content": "x"}),
                "invalid_request",
            ),
            tool_error(
                await session.call_tool(
                    "write_session_note", {**IDS, "path": "a", "content": "x", "extra": 1}
                ),
                "invalid_request",
            ),
            tool_error(
                await session.call_tool("read_session_note", {**IDS, "path": "missing"}), "note_not_found"
            ),
        ]

    errors = run_mcp(gunicorn_url, body)
    assert errors[0]["details"] == {"limit_bytes": 65536, "size_bytes": 65537}
    assert not RecoverySession.objects.exists() and not SessionNoteVersion.objects.exists()


def test_scoped_tokens_and_other_sessions_never_see_the_notes(gunicorn_url: str) -> None:
    mine, _ = create_token("alice")
    source_capture(scope_id=SCOPE, source_id="s", content="secret plan", metadata={"session_id": SESSION})

    async def write(session: ClientSession) -> None:
        ok(
            await session.call_tool(
                "write_session_note", {**IDS, "path": "plan.md", "content": "secret plan"}
            )
        )

    run_mcp(gunicorn_url, write, token=mine)
    out = io.StringIO()
    call_command("create_api_token", "bob", "--scope", "git:example/elsewhere", stdout=out)
    elsewhere = out.getvalue().splitlines()[-1]

    async def probe(session: ClientSession) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for tool, extra in (
            ("read_session_note", {"path": "plan.md"}),
            ("list_session_notes", {}),
            ("search_session_notes", {"query": "secret"}),
            ("list_session_history", {}),
            ("search_session_history", {"query": "secret"}),
            ("read_session_history", {"from_position": 1}),
            ("get_recovery_hint", {}),
            ("write_session_note", {"path": "plan.md", "content": "overwrite"}),
        ):
            result[tool] = tool_error(await session.call_tool(tool, {**IDS, **extra}), "scope_forbidden")
        own = {"scope_id": "git:example/elsewhere", "session_id": SESSION}
        result["own_list"] = ok(await session.call_tool("list_session_notes", own))
        result["own_history"] = ok(await session.call_tool("list_session_history", own))
        return result

    probed = run_mcp(gunicorn_url, probe, token=elsewhere)
    assert probed["own_list"]["notes"] == [] and probed["own_history"]["items"] == []

    async def other_session(session: ClientSession) -> dict[str, Any]:
        ids = {"scope_id": SCOPE, "session_id": "another-run"}
        return {
            "list": ok(await session.call_tool("list_session_notes", ids)),
            "search": ok(await session.call_tool("search_session_notes", {**ids, "query": "secret"})),
            "history": ok(await session.call_tool("search_session_history", {**ids, "query": "secret"})),
            "read": tool_error(
                await session.call_tool("read_session_note", {**ids, "path": "plan.md"}), "note_not_found"
            ),
        }

    seen = run_mcp(gunicorn_url, other_session, token=mine)
    assert (
        seen["list"]["notes"] == [] and seen["search"]["matches"] == [] and seen["history"]["matches"] == []
    )
    assert ok_read_is_unchanged(gunicorn_url, mine)


def ok_read_is_unchanged(gunicorn_url: str, token: str) -> bool:
    async def body(session: ClientSession) -> dict[str, Any]:
        return ok(await session.call_tool("read_session_note", {**IDS, "path": "plan.md"}))

    note = run_mcp(gunicorn_url, body, token=token)
    return note["content"] == "secret plan" and note["version"] == 1


def test_two_mcp_clients_appending_to_one_note_at_once_lose_nothing(gunicorn_url: str) -> None:
    """Two agents (two MCP sessions, two gunicorn workers) append to one note concurrently."""
    barrier = threading.Barrier(2)
    per_client = 15

    def client(name: str) -> Callable[[], list[int]]:
        async def body(session: ClientSession) -> list[int]:
            barrier.wait(timeout=30)
            versions = []
            for i in range(per_client):
                result = ok(
                    await session.call_tool(
                        "write_session_note",
                        {**IDS, "path": "log.md", "content": f"{name} {i}\n", "mode": "append"},
                    )
                )
                versions.append(result["note"]["version"])
            return versions

        return lambda: run_mcp(gunicorn_url, body)

    results: dict[str, Any] = {}

    def run(name: str) -> None:
        try:
            results[name] = client(name)()
        except BaseException as exc:  # asserted below
            results[name] = exc

    threads = [threading.Thread(target=run, args=(name,)) for name in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive()
    assert all(isinstance(v, list) for v in results.values()), results
    assert sorted(results["alpha"] + results["beta"]) == list(range(1, 2 * per_client + 1))

    async def read(session: ClientSession) -> dict[str, Any]:
        return ok(await session.call_tool("read_session_note", {**IDS, "path": "log.md"}))

    lines = run_mcp(gunicorn_url, read)["content"].splitlines()
    for name in ("alpha", "beta"):
        assert [line for line in lines if line.startswith(name)] == [f"{name} {i}" for i in range(per_client)]
    assert len(lines) == 2 * per_client
