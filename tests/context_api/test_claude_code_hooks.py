"""The Claude Code pair of hooks, run as real subprocesses the way Claude Code runs them: the hook
input JSON on stdin (``session_id``, ``transcript_path``, ``cwd``, ``permission_mode``,
``hook_event_name`` and the event's own fields), a transcript JSONL of ``user`` / ``assistant``
lines, the settings in the environment, against the scripted local HTTP server.

The transcripts are written in the format Claude Code keeps in ``~/.claude/projects/``: one JSON
object per line with ``type``, ``message`` (``role``, ``content`` blocks), ``uuid``,
``parentUuid``, ``isSidechain``, ``sessionId``, ``timestamp`` (docs/agents/claude-code.md says
where that was read). No database and no sleeps.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.context_api.fake_http import FakeServer, Reply
from tests.context_api.test_stop_hook import (
    CONTENT,
    EXPERIENCE_C,
    MEMORY_A,
    MEMORY_B,
    PROMPT,
    SCOPE,
    SESSION_ID,
    TIMEOUT,
    assert_within_budget,
    feedback_answer,
    feedback_requests,
    quiet_diagnostic,
    ready,
    run_script,
    state_files,
    used,
)

HOOKS = Path(__file__).resolve().parents[2] / "clients" / "python" / "src" / "powercontext_hooks"
PROMPT_HOOK = HOOKS / "claude_code_user_prompt_submit.py"
STOP_HOOK = HOOKS / "claude_code_stop.py"
RECALL = "powercontext.claude_code.recall"
FEEDBACK = "powercontext.claude_code.feedback"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


def event(outcome: str, **fields: object) -> dict[str, object]:
    return {"component": FEEDBACK, "event": "context_feedback", "outcome": outcome, **fields}


def prompt_input(tmp_path: Path, transcript: Path) -> dict[str, object]:
    """Claude Code's UserPromptSubmit input."""

    return {
        "session_id": SESSION_ID,
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": PROMPT,
    }


def stop_input(
    tmp_path: Path, transcript: Path, *, active: bool = False, **extra: object
) -> dict[str, object]:
    """Claude Code's Stop input; newer versions add ``last_assistant_message`` (``extra``)."""

    return {
        "session_id": SESSION_ID,
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        **extra,
    }


class Transcript:
    """A Claude Code transcript file, written line by line as the session goes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.parent: str | None = None
        path.write_text("")

    def add(self, kind: str, content: object, **extra: object) -> None:
        line_id = str(uuid.uuid4())
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message.update(
                model="claude-sonnet-4-5", id=f"msg_{line_id[:8]}", type="message", stop_reason=None
            )
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/repo",
            "sessionId": SESSION_ID,
            "version": "2.1.0",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": line_id,
            "timestamp": "2026-05-18T10:00:00.000Z",
            **extra,
        }
        self.parent = line_id
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def prompt(self, text: str = PROMPT) -> None:
        self.add("user", text)

    def says(self, text: str) -> None:
        self.add("assistant", [{"type": "text", "text": text}])

    def calls(self, name: str, tool_input: dict[str, Any], result: str) -> None:
        tool_use_id = f"toolu_{uuid.uuid4().hex[:24]}"
        self.add("assistant", [{"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}])
        self.add("user", [{"type": "tool_result", "tool_use_id": tool_use_id, "content": result}])


def prepare_turn(server: FakeServer, tmp_path: Path, transcript: Transcript) -> None:
    """The user's prompt: Claude Code writes it and runs the UserPromptSubmit hook."""

    transcript.prompt()
    server.queue.append(Reply(200, json.dumps(ready()).encode(), {"Content-Type": "application/json"}))
    result, _ = run_script(PROMPT_HOOK, tmp_path, prompt_input(tmp_path, transcript.path), server.url)
    assert result.returncode == 0 and result.stderr == ""
    assert (
        result.stdout
        == json.dumps(
            {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": CONTENT}}
        )
        + "\n"
    )


@pytest.fixture
def transcript(tmp_path: Path) -> Transcript:
    return Transcript(tmp_path / f"{SESSION_ID}.jsonl")


# --------------------------------------------------------------------------- UserPromptSubmit


def test_the_prompt_hook_answers_in_claude_codes_shape_and_keeps_the_citations(server, tmp_path, transcript):
    prepare_turn(server, tmp_path, transcript)

    [request] = server.requests
    assert request.path == "/v1/context/prepare"
    assert request.json() == {"scope_id": SCOPE, "query": PROMPT, "max_bytes": 8000}
    [state] = state_files(tmp_path)
    assert json.loads(state.read_text())["citations"] == [MEMORY_A, MEMORY_B, EXPERIENCE_C]


def test_the_prompt_hook_names_claude_code_in_its_diagnostic(server, tmp_path, transcript):
    server.respond(
        200,
        {
            "schema": "powercontext.prepared-context.v1",
            "status": "empty",
            "content": None,
            "content_bytes": 0,
        },
    )
    result, _ = run_script(PROMPT_HOOK, tmp_path, prompt_input(tmp_path, transcript.path), server.url)

    assert result.returncode == 0 and result.stdout == ""
    assert json.loads(result.stderr) == {
        "component": RECALL,
        "event": "context_prepare",
        "outcome": "empty",
        "http_status": 200,
        "context_status": "empty",
        "content_bytes": 0,
    }


# --------------------------------------------------------------------------- Stop


def test_a_final_message_citing_an_entry_records_one_used(server, tmp_path, transcript):
    prepare_turn(server, tmp_path, transcript)
    transcript.says(f"Done; I followed {MEMORY_B['entry_version_id']}.")
    server.respond(200, feedback_answer(1))
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path), server.url)

    assert quiet_diagnostic(result) == event("recorded", http_status=200, items=1, recorded=1)
    assert [r.json() for r in feedback_requests(server)] == [used(MEMORY_B)]


def test_tool_use_inputs_and_the_final_text_count_tool_results_and_thinking_do_not(
    server, tmp_path, transcript
):
    # An earlier turn cited B; it is not this turn's use.
    transcript.prompt("earlier question")
    transcript.says(f"Earlier answer, see {MEMORY_B['entry_id']}.")
    prepare_turn(server, tmp_path, transcript)
    transcript.add(
        "assistant", [{"type": "thinking", "thinking": MEMORY_B["entry_version_id"], "signature": "s"}]
    )
    transcript.calls(
        "mcp__powercontext__get_memory_entry",
        {"scope_id": SCOPE, "citation": MEMORY_A},
        json.dumps({"entry": {"citation": MEMORY_B}}),  # a tool result: not the agent's words
    )
    transcript.calls("Bash", {"command": "pytest -q"}, f"ok {EXPERIENCE_C['artifact_ref']['artifact_id']}")
    transcript.says("All tests pass.")
    server.respond(200, feedback_answer(1))
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path), server.url)

    assert quiet_diagnostic(result) == event("recorded", http_status=200, items=1, recorded=1)
    assert [r.json() for r in feedback_requests(server)] == [used(MEMORY_A)]


def test_the_stop_inputs_last_message_counts_before_the_transcript_has_it(server, tmp_path, transcript):
    prepare_turn(server, tmp_path, transcript)  # the final line is not flushed yet
    server.respond(200, feedback_answer(1))
    message = f"Rolled back first ({EXPERIENCE_C['artifact_ref']['artifact_id']})."
    result, _ = run_script(
        STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path, last_assistant_message=message), server.url
    )

    assert quiet_diagnostic(result)["outcome"] == "recorded"
    assert [r.json() for r in feedback_requests(server)] == [used(EXPERIENCE_C)]


def test_subagent_lines_are_not_the_turn(server, tmp_path, transcript):
    prepare_turn(server, tmp_path, transcript)
    transcript.add("user", "subagent task", isSidechain=True)  # would end the turn if it counted
    transcript.add("assistant", [{"type": "text", "text": MEMORY_B["entry_id"]}], isSidechain=True)
    transcript.says(f"Done ({MEMORY_A['entry_id']}).")
    server.respond(200, feedback_answer(1))
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path), server.url)

    assert quiet_diagnostic(result)["outcome"] == "recorded"
    assert [r.json() for r in feedback_requests(server)] == [used(MEMORY_A)]


def test_nothing_cited_sends_nothing(server, tmp_path, transcript):
    prepare_turn(server, tmp_path, transcript)
    transcript.says("Done, nothing from memory was needed.")
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path), server.url)

    assert quiet_diagnostic(result) == event("nothing_used", items=0)
    assert feedback_requests(server) == []


def test_a_continued_turn_reports_only_what_is_new(server, tmp_path, transcript):
    prepare_turn(server, tmp_path, transcript)
    transcript.says(f"First pass ({MEMORY_A['entry_id']}).")
    server.respond(200, feedback_answer(1))
    first, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path), server.url)
    # Another Stop hook blocked; Claude Code feeds its reason back and the agent goes on.
    transcript.add("user", [{"type": "text", "text": "Stop hook feedback: run the linter too"}], isMeta=True)
    transcript.says(f"Linted, and {MEMORY_A['entry_id']} still holds; {MEMORY_B['entry_id']} too.")
    again, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path, active=True), server.url)
    third, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path, active=True), server.url)

    assert quiet_diagnostic(first)["outcome"] == "recorded"
    assert quiet_diagnostic(again)["outcome"] == "recorded"
    assert quiet_diagnostic(third) == event("nothing_used", items=0)
    assert [r.json() for r in feedback_requests(server)] == [used(MEMORY_A), used(MEMORY_B)]


def test_without_a_prepared_context_nothing_is_sent(server, tmp_path, transcript):
    transcript.prompt()
    transcript.says(MEMORY_A["entry_id"])
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, transcript.path), server.url)

    assert quiet_diagnostic(result) == event("no_context")
    assert server.requests == []


def test_server_down_slow_or_failing_is_quiet_and_bounded(server, tmp_path, transcript):
    prepare_turn(server, tmp_path, transcript)
    transcript.says(f"Used {MEMORY_A['entry_id']}.")
    stdin = stop_input(tmp_path, transcript.path)
    with socket.socket() as bound_not_listening:
        bound_not_listening.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{bound_not_listening.getsockname()[1]}"
        result, elapsed = run_script(
            STOP_HOOK, tmp_path, stdin, down, POWERCONTEXT_TIMEOUT_SECONDS=str(TIMEOUT)
        )
    assert quiet_diagnostic(result) == event("server_unavailable", items=1)
    assert_within_budget(elapsed)

    server.respond(500, {"error": {"code": "internal", "message": "x", "details": None}})
    result, elapsed = run_script(
        STOP_HOOK, tmp_path, stdin, server.url, POWERCONTEXT_TIMEOUT_SECONDS=str(TIMEOUT)
    )
    assert quiet_diagnostic(result) == event("invalid_response", http_status=500, items=1)
    assert_within_budget(elapsed)

    server.respond(200, feedback_answer(1), hold=True)
    result, elapsed = run_script(
        STOP_HOOK, tmp_path, stdin, server.url, POWERCONTEXT_TIMEOUT_SECONDS=str(TIMEOUT)
    )
    assert quiet_diagnostic(result) == event("server_unavailable", items=1)
    assert_within_budget(elapsed)
