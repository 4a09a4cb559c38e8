"""The Codex Stop hook, run as a real subprocess the way Codex runs it (the Stop input JSON on
stdin, settings in the environment), after the UserPromptSubmit hook prepared the turn, against
the scripted local HTTP server.

No database and no sleeps: the "slow server" holds its reply on a threading.Event that is only set
after the hook process has already given up; elapsed times are measured, never waited for.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from powercontext_hooks import codex_stop, hook_state, hook_turn

from powercontext.prepare.render import render_content
from tests.context_api.fake_http import FakeServer, Reply

HOOKS = Path(__file__).resolve().parents[2] / "clients" / "python" / "src" / "powercontext_hooks"
PROMPT_HOOK = HOOKS / "codex_user_prompt_submit.py"
STOP_HOOK = HOOKS / "codex_stop.py"
SCHEMA = "powercontext.prepared-context.v1"
FEEDBACK_PATH = "/v1/context/feedback"

SESSION_ID = "019d036d-c7fa-72d2-b6fd-78878bfe34e4"
TURN_ID = "019d036d-c7fa-72d2-b6fd-000000000002"
SCOPE = "SECRET-SCOPE:team/alpha"
TOKEN = "SECRET-TOKEN-abc123"
PROMPT = "SECRET-PROMPT how do we rotate the staging database password?"
TIMEOUT = 0.3  # POWERCONTEXT_TIMEOUT_SECONDS for the failure tests
# Interpreter start and imports on a loaded 2-core machine: what a run may take besides the timeout.
MARGIN = 2.5

MEMORY_A = {
    "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 7},
    "entry_id": "mem_ent_" + "a1" * 16,
    "entry_version_id": "mem_ver_" + "a2" * 16,
}
MEMORY_B = {
    "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 7},
    "entry_id": "mem_ent_" + "b1" * 16,
    "entry_version_id": "mem_ver_" + "b2" * 16,
}
EXPERIENCE_C = {"artifact_ref": {"family": "experience", "artifact_id": "exp_" + "c3" * 16, "revision": 2}}
CITATIONS = [MEMORY_A, MEMORY_B, EXPERIENCE_C]
IDS = (
    MEMORY_A["entry_id"],
    MEMORY_A["entry_version_id"],
    MEMORY_B["entry_id"],
    MEMORY_B["entry_version_id"],
    EXPERIENCE_C["artifact_ref"]["artifact_id"],
)
CONTENT = render_content(
    [
        {"citation": MEMORY_A, "content": "SECRET-CONTENT run the contract tests", "truncated": False},
        {"citation": MEMORY_B, "content": "SECRET-CONTENT deploys need a review", "truncated": False},
        {
            "citation": EXPERIENCE_C,
            "content": "SECRET-CONTENT when a migration fails, roll back first",
            "truncated": False,
            "kind": "experience",
        },
    ]
)
SECRETS = ("SECRET-PROMPT", "SECRET-SCOPE", "SECRET-TOKEN", "SECRET-CONTENT", "rotate the staging", *IDS)


# --------------------------------------------------------------------------- helpers


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


def ready(content: str = CONTENT) -> dict[str, object]:
    return {"schema": SCHEMA, "status": "ready", "content": content, "content_bytes": len(content.encode())}


def feedback_answer(count: int) -> dict[str, object]:
    item = {"outcome": "used", "recorded": True, "status": "recorded"}
    return {"recorded": count, "items": [item] * count}


def used(*citations: dict[str, Any]) -> dict[str, object]:
    return {"scope_id": SCOPE, "items": [{"citation": c, "outcome": "used"} for c in citations]}


def hook_env(tmp_path: Path, url: str | None, **overrides: str) -> dict[str, str]:
    """What a hook sees: no inherited POWERCONTEXT_* or proxy settings, a private state directory."""

    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("POWERCONTEXT_", "GIT_")) and "proxy" not in key.lower()
    }
    env.update(POWERCONTEXT_STATE_DIR=str(tmp_path / "state"), POWERCONTEXT_SCOPE_ID=SCOPE)
    if url is not None:
        env["POWERCONTEXT_URL"] = url
    env.update(overrides)
    return env


def run_script(
    script: Path, tmp_path: Path, stdin: object, url: str | None, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    data = stdin if isinstance(stdin, str) else json.dumps(stdin)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(script)],
        input=data,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=hook_env(tmp_path, url, **env),
        cwd=tmp_path,
        timeout=30,
        check=False,
    )
    return result, time.monotonic() - started


def prompt_input(tmp_path: Path, session_id: str = SESSION_ID) -> dict[str, object]:
    """Codex's UserPromptSubmit input (codex-rs/hooks/schema/generated/user-prompt-submit...)."""

    return {
        "session_id": session_id,
        "turn_id": TURN_ID,
        "transcript_path": None,
        "cwd": str(tmp_path),
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5",
        "permission_mode": "default",
        "prompt": PROMPT,
    }


def stop_input(
    tmp_path: Path, message: str | None = None, transcript: Path | None = None, **extra: object
) -> dict[str, object]:
    """Codex's Stop input: every field stop.command.input.schema.json requires."""

    return {
        "session_id": SESSION_ID,
        "turn_id": TURN_ID,
        "transcript_path": str(transcript) if transcript is not None else None,
        "cwd": str(tmp_path),
        "hook_event_name": "Stop",
        "model": "gpt-5",
        "permission_mode": "default",
        "stop_hook_active": False,
        "last_assistant_message": message,
        **extra,
    }


def prepare_turn(
    server: FakeServer,
    tmp_path: Path,
    script: Path = PROMPT_HOOK,
    stdin: object = None,
    content: str = CONTENT,
) -> None:
    """Run the UserPromptSubmit hook against a ready answer, as the agent does before the turn."""

    server.queue.append(Reply(200, json.dumps(ready(content)).encode(), {"Content-Type": "application/json"}))
    result, _ = run_script(script, tmp_path, stdin or prompt_input(tmp_path), server.url)
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] == content


def feedback_requests(server: FakeServer) -> list[Any]:
    return [request for request in server.requests if request.path == FEEDBACK_PATH]


def state_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "state").glob("session-*.json"))


def quiet_diagnostic(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """Assert the Stop hook's shape (exit 0, nothing on stdout, one JSON line on stderr, no
    prompt, content, scope, token or id in it) and return the event."""

    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1
    for secret in SECRETS:
        assert secret not in result.stderr
    return json.loads(result.stderr)


def event(
    outcome: str, component: str = "powercontext.codex.feedback", **fields: object
) -> dict[str, object]:
    return {"component": component, "event": "context_feedback", "outcome": outcome, **fields}


def rollout(path: Path, *lines: tuple[str, dict[str, Any]]) -> Path:
    """A Codex rollout file: one ``{"timestamp", "type", "payload"}`` line per item."""

    path.write_text(
        "".join(
            json.dumps({"timestamp": "2026-05-18T10:00:00.000Z", "type": kind, "payload": payload}) + "\n"
            for kind, payload in lines
        ),
        encoding="utf-8",
    )
    return path


def assistant(text: str) -> tuple[str, dict[str, Any]]:
    return (
        "response_item",
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
    )


def user(text: str) -> tuple[str, dict[str, Any]]:
    return (
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
    )


def function_call(name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "response_item",
        {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": "call_1"},
    )


def turn_started(turn_id: str) -> tuple[str, dict[str, Any]]:
    return ("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 272000})


SESSION_META = ("session_meta", {"id": SESSION_ID, "cwd": "/repo", "cli_version": "0.130.0"})


# --------------------------------------------------------------------------- what counts as use


def test_a_final_message_citing_an_entry_records_one_used(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(1))
    message = f"Ran the contract tests as the note says ({MEMORY_A['entry_version_id']})."
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, message), server.url)

    assert quiet_diagnostic(result) == event("recorded", http_status=200, items=1, recorded=1)
    [request] = feedback_requests(server)
    assert request.method == "POST"
    assert request.headers.get("Content-Type") == "application/json"
    assert request.headers.get("Authorization") is None
    assert request.json() == used(MEMORY_A)


def test_the_turns_tool_calls_and_final_message_count_and_nothing_else_does(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(2))
    transcript = rollout(
        tmp_path / "rollout.jsonl",
        SESSION_META,
        # An earlier turn cited B: not this turn's use.
        turn_started("turn-0"),
        ("event_msg", {"type": "user_message", "message": "earlier question"}),
        assistant(f"Earlier: {MEMORY_B['entry_version_id']}"),
        ("event_msg", {"type": "task_complete", "last_agent_message": "earlier"}),
        # This turn: the prompt and the injected context hold every id; tool output and reasoning too.
        turn_started(TURN_ID),
        user(PROMPT),
        (
            "response_item",
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": CONTENT}]},
        ),
        ("event_msg", {"type": "user_message", "message": PROMPT}),
        (
            "response_item",
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": MEMORY_B["entry_id"]}]},
        ),
        function_call("mcp__powercontext__get_memory_entry", {"scope_id": SCOPE, "citation": MEMORY_A}),
        (
            "response_item",
            {"type": "function_call_output", "call_id": "call_1", "output": json.dumps(MEMORY_B)},
        ),
        assistant("Checking the lesson."),
    )
    message = f"Rolled back first, as {EXPERIENCE_C['artifact_ref']['artifact_id']} says."
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, message, transcript), server.url)

    assert quiet_diagnostic(result) == event("recorded", http_status=200, items=2, recorded=2)
    assert [r.json() for r in feedback_requests(server)] == [used(MEMORY_A, EXPERIENCE_C)]


def test_a_rollout_that_has_not_reached_the_stopping_turn_counts_nothing_from_it(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(1))
    transcript = rollout(
        tmp_path / "rollout.jsonl",
        turn_started("turn-0"),
        assistant(f"Earlier: {MEMORY_B['entry_version_id']}"),
    )
    message = f"Now: {MEMORY_A['entry_id']}"
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, message, transcript), server.url)

    assert quiet_diagnostic(result)["outcome"] == "recorded"
    assert [r.json() for r in feedback_requests(server)] == [used(MEMORY_A)]


def test_a_shell_call_with_an_entry_id_counts_as_use(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(1))
    transcript = rollout(
        tmp_path / "rollout.jsonl",
        turn_started(TURN_ID),
        (
            "response_item",
            {"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": "*** x"},
        ),
        function_call("shell", {"command": ["grep", "-r", MEMORY_B["entry_id"], "."]}),
    )
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, "Done.", transcript), server.url)

    assert quiet_diagnostic(result)["outcome"] == "recorded"
    assert feedback_requests(server)[0].json() == used(MEMORY_B)


def test_each_used_citation_is_reported_once_in_prepared_order(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(3))
    message = " ".join(
        [
            EXPERIENCE_C["artifact_ref"]["artifact_id"],
            MEMORY_B["entry_id"],
            MEMORY_B["entry_version_id"],
            MEMORY_A["entry_id"],
            EXPERIENCE_C["artifact_ref"]["artifact_id"],
        ]
    )
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, message), server.url)

    assert quiet_diagnostic(result) == event("recorded", http_status=200, items=3, recorded=3)
    assert [r.json() for r in feedback_requests(server)] == [used(MEMORY_A, MEMORY_B, EXPERIENCE_C)]


def test_nothing_cited_sends_nothing_and_keeps_the_state(server, tmp_path):
    prepare_turn(server, tmp_path)
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, "All done, tests pass."), server.url)

    assert quiet_diagnostic(result) == event("nothing_used", items=0)
    assert feedback_requests(server) == []
    assert len(state_files(tmp_path)) == 1  # a continued turn's next Stop may still find a use


def test_an_id_inside_a_longer_word_is_not_a_citation(server, tmp_path):
    prepare_turn(server, tmp_path)
    message = f"x{MEMORY_A['entry_version_id']} {MEMORY_A['entry_id']}9 {MEMORY_B['entry_id']}-old"
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, message), server.url)

    assert quiet_diagnostic(result) == event("nothing_used", items=0)
    assert feedback_requests(server) == []


def test_a_second_stop_does_not_report_again(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(1))
    message = f"Used {MEMORY_A['entry_version_id']}."
    first, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, message), server.url)
    again, _ = run_script(
        STOP_HOOK, tmp_path, stop_input(tmp_path, message, stop_hook_active=True), server.url
    )

    assert quiet_diagnostic(first)["outcome"] == "recorded"
    assert quiet_diagnostic(again) == event("nothing_used", items=0)
    assert len(feedback_requests(server)) == 1


def test_after_everything_is_reported_the_state_is_gone(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(3))
    message = f"{MEMORY_A['entry_id']} {MEMORY_B['entry_id']} {EXPERIENCE_C['artifact_ref']['artifact_id']}"
    first, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, message), server.url)
    again, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, message), server.url)

    assert quiet_diagnostic(first)["outcome"] == "recorded"
    assert state_files(tmp_path) == []
    assert quiet_diagnostic(again) == event("no_context")
    assert len(feedback_requests(server)) == 1


def test_a_turn_without_prepared_context_reports_nothing(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.queue.append(
        Reply(
            200,
            json.dumps({"schema": SCHEMA, "status": "empty", "content": None, "content_bytes": 0}).encode(),
        )
    )
    second_prompt, _ = run_script(PROMPT_HOOK, tmp_path, prompt_input(tmp_path), server.url)
    assert json.loads(second_prompt.stderr)["outcome"] == "empty"

    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, MEMORY_A["entry_id"]), server.url)

    assert quiet_diagnostic(result) == event("no_context")
    assert feedback_requests(server) == []


def test_sessions_do_not_see_each_others_context(server, tmp_path):
    prepare_turn(server, tmp_path, stdin=prompt_input(tmp_path, session_id="another-session"))
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, MEMORY_A["entry_id"]), server.url)

    assert quiet_diagnostic(result) == event("no_context")
    assert feedback_requests(server) == []


def test_the_bearer_token_is_sent_when_configured(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(1))
    result, _ = run_script(
        STOP_HOOK, tmp_path, stop_input(tmp_path, MEMORY_A["entry_id"]), server.url, POWERCONTEXT_TOKEN=TOKEN
    )

    assert quiet_diagnostic(result)["outcome"] == "recorded"
    assert feedback_requests(server)[0].headers.get("Authorization") == f"Bearer {TOKEN}"


def test_a_state_older_than_a_day_is_ignored_and_removed(server, tmp_path):
    environ = {"POWERCONTEXT_STATE_DIR": str(tmp_path / "state")}
    long_ago = time.time() - hook_state.MAX_AGE_SECONDS - 60
    assert hook_state.save(
        environ, SESSION_ID, hook_state.SessionState(SCOPE, int(long_ago), CITATIONS), long_ago
    )
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, MEMORY_A["entry_id"]), server.url)

    assert quiet_diagnostic(result) == event("no_context")
    assert state_files(tmp_path) == []
    assert server.requests == []


# --------------------------------------------------------------------------- fail open


def assert_within_budget(elapsed: float) -> None:
    assert elapsed < TIMEOUT + MARGIN  # the hook's own deadline ended the call, not the server


def test_server_down_is_quiet_and_bounded(tmp_path, server):
    prepare_turn(server, tmp_path)
    with socket.socket() as bound_not_listening:
        bound_not_listening.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{bound_not_listening.getsockname()[1]}"
        result, elapsed = run_script(
            STOP_HOOK,
            tmp_path,
            stop_input(tmp_path, MEMORY_A["entry_id"]),
            url,
            POWERCONTEXT_TIMEOUT_SECONDS=str(TIMEOUT),
        )

    assert quiet_diagnostic(result) == event("server_unavailable", items=1)
    assert_within_budget(elapsed)
    assert len(state_files(tmp_path)) == 1  # not recorded: still there for a later Stop of the turn


def test_a_server_that_never_answers_is_cut_at_the_timeout(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(1), hold=True)  # answered only after the hook has exited
    result, elapsed = run_script(
        STOP_HOOK,
        tmp_path,
        stop_input(tmp_path, MEMORY_A["entry_id"]),
        server.url,
        POWERCONTEXT_TIMEOUT_SECONDS=str(TIMEOUT),
    )

    assert quiet_diagnostic(result) == event("server_unavailable", items=1)
    assert len(feedback_requests(server)) == 1
    assert_within_budget(elapsed)


def test_a_body_that_trickles_in_is_cut_at_the_timeout(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, feedback_answer(1), trickle=True)  # every piece in time, the whole body ~5 s
    result, elapsed = run_script(
        STOP_HOOK,
        tmp_path,
        stop_input(tmp_path, MEMORY_A["entry_id"]),
        server.url,
        POWERCONTEXT_TIMEOUT_SECONDS=str(TIMEOUT),
    )

    assert quiet_diagnostic(result) == event("server_unavailable", items=1)
    assert_within_budget(elapsed)


@pytest.fixture
def hanging_up_server() -> Iterator[str]:
    """Reads the request, then closes the connection without a word (a server stopped mid-request)."""

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    address = listener.getsockname()
    yield f"http://127.0.0.1:{address[1]}"
    stop.set()
    socket.create_connection(address).close()  # wakes the accept() so the thread sees ``stop``
    thread.join(5)
    listener.close()


def test_a_server_stopped_mid_request_is_quiet(server, tmp_path, hanging_up_server):
    prepare_turn(server, tmp_path)
    result, elapsed = run_script(
        STOP_HOOK,
        tmp_path,
        stop_input(tmp_path, MEMORY_A["entry_id"]),
        hanging_up_server,
        POWERCONTEXT_TIMEOUT_SECONDS=str(TIMEOUT),
    )

    assert quiet_diagnostic(result) == event("server_unavailable", items=1)
    assert_within_budget(elapsed)


ERROR_ENVELOPE = {
    "error": {"code": "x", "message": f"SECRET-CONTENT {MEMORY_A['entry_id']}", "details": None}
}

STATUSES = {
    "internal_error": (500, ERROR_ENVELOPE, event("invalid_response", http_status=500, items=1)),
    "unauthorized": (401, ERROR_ENVELOPE, event("authentication_failed", http_status=401, items=1)),
    "forbidden": (403, ERROR_ENVELOPE, event("forbidden", http_status=403, items=1)),
    "older_server": (404, ERROR_ENVELOPE, event("version_mismatch", http_status=404, items=1)),
    "invalid": (422, ERROR_ENVELOPE, event("invalid_response", http_status=422, items=1)),
    "rate_limited": (429, ERROR_ENVELOPE, event("rate_limited", http_status=429, items=1)),
    "unavailable": (503, ERROR_ENVELOPE, event("server_unavailable", http_status=503, items=1)),
    "redirect": (302, None, event("invalid_response", http_status=302, items=1)),
    "not_an_object": (200, [feedback_answer(1)], event("invalid_response", http_status=200, items=1)),
    "wrong_count": (200, feedback_answer(2), event("invalid_response", http_status=200, items=1)),
    "bool_count": (
        200,
        {"recorded": True, "items": [{}]},
        event("invalid_response", http_status=200, items=1),
    ),
    "too_many_recorded": (
        200,
        {"recorded": 2, "items": [{}]},
        event("invalid_response", http_status=200, items=1),
    ),
}


@pytest.mark.parametrize("case", sorted(STATUSES))
def test_every_other_answer_is_quiet_and_keeps_the_state(server, tmp_path, case):
    status, payload, expected = STATUSES[case]
    prepare_turn(server, tmp_path)
    server.respond(status, payload)
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, MEMORY_A["entry_id"]), server.url)

    assert quiet_diagnostic(result) == expected
    assert len(feedback_requests(server)) == 1
    assert len(state_files(tmp_path)) == 1


def test_a_body_that_is_not_json_is_invalid(server, tmp_path):
    prepare_turn(server, tmp_path)
    server.respond(200, raw=b"<html>SECRET-CONTENT</html>", content_type="text/html")
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, MEMORY_A["entry_id"]), server.url)

    assert quiet_diagnostic(result) == event("invalid_response", http_status=200, items=1)


@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param(f"not json {PROMPT}", id="invalid_json"),
        pytest.param("[]", id="not_an_object"),
        pytest.param({"hook_event_name": "SubagentStop", "session_id": SESSION_ID}, id="subagent_stop"),
        pytest.param({"hook_event_name": "UserPromptSubmit", "session_id": SESSION_ID}, id="other_event"),
        pytest.param({"hook_event_name": "Stop"}, id="no_session"),
        pytest.param({"hook_event_name": "Stop", "session_id": "  "}, id="blank_session"),
        pytest.param({"hook_event_name": "Stop", "session_id": 42}, id="session_not_a_string"),
    ],
)
def test_malformed_input_is_skipped_without_any_request(server, tmp_path, stdin):
    prepare_turn(server, tmp_path)
    result, _ = run_script(STOP_HOOK, tmp_path, stdin, server.url)

    assert quiet_diagnostic(result) == event("skipped")
    assert feedback_requests(server) == []


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "http://user:pw@127.0.0.1:1", "not a url"])
def test_an_unusable_url_is_skipped(tmp_path, url):
    result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, MEMORY_A["entry_id"]), url)

    assert quiet_diagnostic(result) == event("skipped")


def test_odd_transcripts_and_messages_are_tolerated(server, tmp_path):
    prepare_turn(server, tmp_path)
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(
        b'\xff\xfe not json\n[1,2]\n{"type":"response_item","payload":"x"}\n{"type":"assistant"}\n'
    )
    for payload in (
        stop_input(tmp_path, None, tmp_path / "missing.jsonl"),
        stop_input(tmp_path, None, junk),
        stop_input(tmp_path, None, tmp_path),  # a directory
        stop_input(tmp_path, 42, None, transcript_path=17),  # type: ignore[arg-type]
        {"hook_event_name": "Stop", "session_id": SESSION_ID},  # nothing but the essentials
    ):
        result, _ = run_script(STOP_HOOK, tmp_path, payload, server.url)
        assert quiet_diagnostic(result) == event("nothing_used", items=0)
    assert feedback_requests(server) == []


def test_a_damaged_state_file_is_no_context(server, tmp_path):
    prepare_turn(server, tmp_path)
    [path] = state_files(tmp_path)
    for damage in (
        b"{not json",
        b"[]",
        json.dumps({"v": 2}).encode(),
        b"x" * (hook_state.MAX_STATE_BYTES + 1),
    ):
        path.write_bytes(damage)
        result, _ = run_script(STOP_HOOK, tmp_path, stop_input(tmp_path, MEMORY_A["entry_id"]), server.url)
        assert quiet_diagnostic(result) == event("no_context")
    assert feedback_requests(server) == []


def test_stdout_stays_empty_even_when_something_prints(monkeypatch, capfd):
    """main() points file descriptor 1 at /dev/null before anything runs."""

    def noisy(*args: object) -> str:
        print("SECRET-CONTENT printed by mistake")
        os.write(1, b"SECRET-CONTENT written to fd 1\n")
        raise RuntimeError("SECRET-CONTENT boom")

    saved, stdout = os.dup(1), sys.stdout
    try:
        monkeypatch.setattr(codex_stop, "run", noisy)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
        assert codex_stop.main() == 0
    finally:
        if sys.stdout is not stdout:
            sys.stdout.close()
            sys.stdout = stdout
        os.dup2(saved, 1)
        os.close(saved)
    captured = capfd.readouterr()
    assert captured.out == ""
    assert json.loads(captured.err) == event("invalid_response")


# --------------------------------------------------------------------------- the state file


def test_the_state_file_is_private_and_holds_only_citations(server, tmp_path):
    prepare_turn(server, tmp_path)
    [path] = state_files(tmp_path)

    assert path.name == f"session-{hashlib.sha256(SESSION_ID.encode()).hexdigest()}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    state = json.loads(path.read_text())
    assert set(state) == {"v", "scope_id", "saved_at", "citations"}
    assert state["citations"] == CITATIONS and state["scope_id"] == SCOPE
    for secret in ("SECRET-PROMPT", "SECRET-CONTENT", "rotate the staging", "untrusted", "BEGIN_"):
        assert secret not in path.read_text()


# --------------------------------------------------------------------------- reading the turn (in process)


def test_turn_boundary_falls_back_to_the_last_user_message_then_to_everything():
    def line(kind: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "t", "type": kind, "payload": payload})

    older = line(*assistant("old"))
    prompt = line("event_msg", {"type": "user_message", "message": "q"})
    newer = line(*assistant("new"))
    assert hook_turn.last_turn_texts([older, prompt, newer]) == ["new"]
    assert hook_turn.last_turn_texts([older, newer]) == ["old", "new"]
    started = line(*turn_started("t"))
    steer = line("event_msg", {"type": "user_message", "message": "steer"})
    assert hook_turn.last_turn_texts([older, started, newer, steer, older]) == ["new", "old"]


def test_read_tail_keeps_only_whole_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("first line\nsecond\nthird\n")
    assert hook_turn.read_tail(str(path), limit=12) == ["third"]
    assert hook_turn.read_tail(str(path)) == ["first line", "second", "third"]
    assert hook_turn.read_tail(str(tmp_path / "absent")) == []


def test_short_ids_never_count():
    short = {"artifact_ref": {"family": "experience", "artifact_id": "exp_1", "revision": 1}}
    assert hook_turn.used_citations([short], ["see exp_1"]) == []
    assert hook_turn.used_citations([EXPERIENCE_C], [f"`{EXPERIENCE_C['artifact_ref']['artifact_id']}`"]) == [
        EXPERIENCE_C
    ]


# --------------------------------------------------------------------------- end to end, against the real server


@pytest.mark.django_db(transaction=True)
def test_a_turn_citing_a_prepared_entry_records_one_use_on_the_live_server(
    live_server: Any, tmp_path: Path
) -> None:
    import httpx

    from powercontext.feedback.models import Feedback, FeedbackCounter

    scope = "hook-feedback-scope"
    remembered = httpx.post(
        f"{live_server.url}/v1/memory/remember",
        json={"scope_id": scope, "kind": "note", "text": "Use the staging cluster for load tests."},
    )
    remembered.raise_for_status()
    entry = remembered.json()["entry"]["citation"]
    settings = {"POWERCONTEXT_SCOPE_ID": scope, "POWERCONTEXT_TIMEOUT_SECONDS": "10"}

    prompt = dict(prompt_input(tmp_path), prompt="where do load tests run?")
    prepared, _ = run_script(PROMPT_HOOK, tmp_path, prompt, live_server.url, **settings)
    assert prepared.returncode == 0 and prepared.stderr == ""
    assert entry["entry_version_id"] in json.loads(prepared.stdout)["hookSpecificOutput"]["additionalContext"]

    transcript = rollout(
        tmp_path / "rollout.jsonl",
        SESSION_META,
        turn_started(TURN_ID),
        user("where do load tests run?"),
        assistant("Let me check the remembered note."),
    )
    message = f"Load tests run on the staging cluster (memory {entry['entry_version_id']})."
    stop = stop_input(tmp_path, message, transcript)
    reported, _ = run_script(STOP_HOOK, tmp_path, stop, live_server.url, **settings)
    again, _ = run_script(STOP_HOOK, tmp_path, stop, live_server.url, **settings)

    assert quiet_diagnostic(reported) == event("recorded", http_status=200, items=1, recorded=1)
    assert quiet_diagnostic(again) == event("no_context")
    row = Feedback.objects.get()
    assert (row.scope_id, row.outcome, row.target, row.reporter) == (
        scope,
        "used",
        f"m:{entry['entry_version_id']}",
        "local",
    )
    assert FeedbackCounter.objects.get(scope_id=scope).uses == 1
