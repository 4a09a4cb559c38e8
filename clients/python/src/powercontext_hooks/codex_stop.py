#!/usr/bin/env python3
"""Codex ``Stop`` hook: report which items of the turn's prepared context the agent used.
Claude Code runs the same hook through ``claude_code_stop.py``.

Run by Codex with the Stop hook input JSON on stdin, as the console script of the
``powercontext-client`` package or as a plain script from a checkout::

    powercontext-codex-stop-hook < stop-input.json
    python3 clients/python/src/powercontext_hooks/codex_stop.py < stop-input.json

Standard library only, so the script runs with any ``python3`` and needs no virtualenv.

Behaviour (see ``docs/agents/codex-hook.md``):

* reads the citations the ``UserPromptSubmit`` hook kept for this session (``hook_state``);
* counts an item as used when its entry version id or entry id (Memory) or artifact id
  (Experience) appears in the agent's final message (``last_assistant_message``) or in the
  agent's messages and tool-call inputs of the turn in the transcript (``hook_turn``);
* sends the used ones, each once, with one ``POST {POWERCONTEXT_URL}/v1/context/feedback`` as
  ``used``; nothing used, no request; once the server recorded them, they leave the state, so a
  second Stop of the same turn does not report them again;
* never writes to stdout (a Stop hook's stdout can make the agent continue the turn), writes one
  content-free JSON diagnostic line on stderr and always exits 0 (fail open).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

if __package__:
    from . import hook_state, hook_turn
    from .hook_http import (
        HookFailure,
        decode_json,
        diagnostic_line,
        event_name_is,
        is_int,
        post_json,
        server_url,
        timeout_seconds,
        token,
    )
else:  # run as a script (``python3 .../codex_stop.py``): its folder is on sys.path
    import hook_state  # type: ignore[import-not-found, no-redef]
    import hook_turn  # type: ignore[import-not-found, no-redef]
    from hook_http import (  # type: ignore[import-not-found, no-redef]
        HookFailure,
        decode_json,
        diagnostic_line,
        event_name_is,
        is_int,
        post_json,
        server_url,
        timeout_seconds,
        token,
    )

CODEX = "codex"
CLAUDE_CODE = "claude_code"
EVENT = "context_feedback"
FEEDBACK_PATH = "/v1/context/feedback"
USER_AGENT = "powercontext-hook"
USED = "used"
MAX_MESSAGE_CHARS = 1024 * 1024

OUTCOMES = frozenset(
    {
        "recorded",
        "nothing_used",
        "no_context",
        "server_unavailable",
        "version_mismatch",
        "authentication_failed",
        "forbidden",
        "rate_limited",
        "invalid_response",
        "skipped",
    }
)
_STATUS_OUTCOMES = {
    401: "authentication_failed",
    403: "forbidden",
    404: "version_mismatch",
    429: "rate_limited",
    503: "server_unavailable",
}


def component(client: str) -> str:
    return f"powercontext.{client}.feedback"


def diagnostic(
    outcome: str,
    *,
    client: str = CODEX,
    http_status: int | None = None,
    items: int | None = None,
    recorded: int | None = None,
) -> str:
    """One JSON line of bounded, content-free fields; a field the hook does not know is omitted."""

    return diagnostic_line(
        component(client), EVENT, outcome, http_status=http_status, items=items, recorded=recorded
    )


def interpret_response(status: int, body: bytes | None, sent: int) -> int:
    """The number of items the server recorded, or HookFailure."""

    if status in _STATUS_OUTCOMES:
        raise HookFailure(_STATUS_OUTCOMES[status], status)
    if status != 200:
        raise HookFailure("invalid_response", status)
    payload = decode_json(status, body)
    if not isinstance(payload, dict):
        raise HookFailure("invalid_response", status)
    recorded, items = payload.get("recorded"), payload.get("items")
    if not is_int(recorded) or not isinstance(items, list) or len(items) != sent:
        raise HookFailure("invalid_response", status)
    if not 0 <= recorded <= sent:
        raise HookFailure("invalid_response", status)
    return recorded


def agent_texts(payload: dict[str, Any]) -> list[str]:
    """The agent's final message and its messages and tool-call inputs of the turn."""

    texts: list[str] = []
    message = payload.get("last_assistant_message")
    if isinstance(message, str):
        texts.append(message[:MAX_MESSAGE_CHARS])
    transcript, turn_id = payload.get("transcript_path"), payload.get("turn_id")
    if isinstance(transcript, str) and transcript.strip():
        lines = hook_turn.read_tail(transcript)
        texts.extend(hook_turn.last_turn_texts(lines, turn_id if isinstance(turn_id, str) else None))
    return texts


def run(stdin_bytes: bytes, environ: dict[str, str], client: str = CODEX) -> str:
    """Report the turn's use; return the stderr diagnostic line."""

    try:
        payload = json.loads(stdin_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return diagnostic("skipped", client=client)
    if not isinstance(payload, dict) or not event_name_is(payload, "Stop"):
        return diagnostic("skipped", client=client)
    session_id = payload.get("session_id")
    url = server_url(environ)
    if not isinstance(session_id, str) or not session_id.strip() or url is None:
        return diagnostic("skipped", client=client)
    now = time.time()
    state = hook_state.load(environ, session_id, now)
    if state is None or not state.citations:
        return diagnostic("no_context", client=client)
    used = hook_turn.used_citations(state.citations, agent_texts(payload))
    if not used:
        return diagnostic("nothing_used", client=client, items=0)
    body: dict[str, object] = {
        "scope_id": state.scope_id,
        "items": [{"citation": citation, "outcome": USED} for citation in used],
    }
    try:
        status, raw = post_json(
            url, FEEDBACK_PATH, body, token(environ), timeout_seconds(environ), USER_AGENT
        )
        recorded = interpret_response(status, raw, len(used))
    except HookFailure as failure:
        return diagnostic(failure.outcome, client=client, http_status=failure.http_status, items=len(used))
    hook_state.forget(environ, session_id, used, now)
    return diagnostic("recorded", client=client, http_status=200, items=len(used), recorded=recorded)


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null: whatever happens, nothing reaches the agent's stdout."""

    try:
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except (OSError, ValueError):
        pass
    try:
        sys.stdout = open(os.devnull, "w")  # open for the rest of the process
    except OSError:
        pass


def main(client: str = CODEX) -> int:
    _silence_stdout()
    try:
        line = run(sys.stdin.buffer.read(), dict(os.environ), client)
    except Exception:  # noqa: BLE001 - fail open on anything unexpected
        line = diagnostic("invalid_response", client=client)
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001, S110 - a closed pipe must not turn into a non-zero exit
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
