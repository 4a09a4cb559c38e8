#!/usr/bin/env python3
"""Codex ``UserPromptSubmit`` hook: ask PowerContext for prepared context and inject it unchanged.
Claude Code runs the same hook through ``claude_code_user_prompt_submit.py``.

Run by Codex with the hook input JSON on stdin, as the console script of the
``powercontext-client`` package or as a plain script from a checkout::

    powercontext-codex-prompt-hook < hook-input.json
    python3 clients/python/src/powercontext_hooks/codex_user_prompt_submit.py < hook-input.json

Standard library only, so the script runs with any ``python3`` and needs no virtualenv.

Behaviour (see ``docs/agents/codex-hook.md``):

* one ``POST {POWERCONTEXT_URL}/v1/context/prepare`` per prompt;
* a strictly valid ``ready`` response is printed as ``hookSpecificOutput.additionalContext``,
  byte-for-byte unchanged, with nothing on stderr;
* every other result prints nothing on stdout and one content-free JSON diagnostic line on stderr;
* the citations of the injected items (never their content, never the prompt) are kept in the
  session's state file for the Stop hook (``codex_stop.py``); a turn without context forgets them;
* the hook always exits 0 (fail open): PowerContext problems never block the agent.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

# The scope id, the HTTP exchange and the session state live beside this file, standard library too.
if __package__:
    from . import hook_state
    from .hook_http import ENV_TOKEN as ENV_TOKEN
    from .hook_http import ENV_URL as ENV_URL
    from .hook_http import (
        HookFailure,
        diagnostic_line,
        env_number,
        event_name_is,
        is_int,
        post_json,
        server_url,
        timeout_seconds,
        token,
    )
    from .hook_scope import ENV_SCOPE_ID as ENV_SCOPE_ID
    from .hook_scope import normalize_git_remote as normalize_git_remote
    from .hook_scope import resolve_scope_id as resolve_scope_id
else:  # run as a script (``python3 .../codex_user_prompt_submit.py``): its folder is on sys.path
    import hook_state  # type: ignore[import-not-found, no-redef]
    from hook_http import (  # type: ignore[import-not-found, no-redef]
        HookFailure,
        diagnostic_line,
        env_number,
        event_name_is,
        is_int,
        post_json,
        server_url,
        timeout_seconds,
        token,
    )
    from hook_scope import resolve_scope_id  # type: ignore[import-not-found, no-redef]

CODEX = "codex"
CLAUDE_CODE = "claude_code"
EVENT = "context_prepare"
PREPARED_CONTEXT_SCHEMA = "powercontext.prepared-context.v1"
PREPARE_PATH = "/v1/context/prepare"
USER_AGENT = "powercontext-hook"

CLIENT_MAX_BYTES = 8000  # Codex additionalContext budget; the upper bound for both clients.
CONTRACT_MIN_BYTES = 512  # PrepareContextRequest.max_bytes minimum.
MAX_QUERY_CHARS = 8192  # PrepareContextRequest.query maxLength.
ENV_MAX_BYTES = "POWERCONTEXT_MAX_BYTES"

OUTCOMES = frozenset(
    {
        "empty",
        "server_unavailable",
        "version_mismatch",
        "authentication_failed",
        "invalid_response",
        "skipped",
    }
)


def component(client: str) -> str:
    return f"powercontext.{client}.recall"


def max_bytes(environ: dict[str, str]) -> int:
    """The requested budget: POWERCONTEXT_MAX_BYTES clamped to 512..8000 (Codex limit), default 8000."""

    value = env_number(environ, ENV_MAX_BYTES, int)
    if value is None:
        return CLIENT_MAX_BYTES
    return max(CONTRACT_MIN_BYTES, min(CLIENT_MAX_BYTES, value))


# --------------------------------------------------------------------------- validation


def validate_prepared_context(payload: object, budget: int) -> tuple[str, str | None, int]:
    """Strictly check a PreparedContext; return (status, content, content_bytes) or raise HookFailure."""

    invalid = HookFailure("invalid_response", 200)
    if not isinstance(payload, dict) or set(payload) != {"schema", "status", "content", "content_bytes"}:
        raise invalid
    status, content, content_bytes = payload["status"], payload["content"], payload["content_bytes"]
    if payload["schema"] != PREPARED_CONTEXT_SCHEMA or not is_int(content_bytes):
        raise invalid
    if status == "empty":
        if content is not None or content_bytes != 0:
            raise invalid
        return status, None, 0
    if status == "ready":
        if not isinstance(content, str) or not content:
            raise invalid
        try:
            actual = len(content.encode("utf-8"))
        except UnicodeEncodeError:  # lone surrogates from a \ud800 escape
            raise invalid from None
        if content_bytes != actual or actual > budget:
            raise invalid
        return status, content, content_bytes
    raise invalid


def interpret_response(status: int, body: bytes | None, budget: int) -> tuple[str, str | None, int]:
    if status == 401:
        raise HookFailure("authentication_failed", status)
    if status == 404:
        raise HookFailure("version_mismatch", status)
    if status == 503:
        raise HookFailure("server_unavailable", status)
    if status != 200 or body is None:
        raise HookFailure("invalid_response", status)
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise HookFailure("invalid_response", status) from None
    return validate_prepared_context(payload, budget)


# --------------------------------------------------------------------------- hook entry point


def diagnostic(
    outcome: str,
    *,
    client: str = CODEX,
    http_status: int | None = None,
    context_status: str | None = None,
    content_bytes: int | None = None,
) -> str:
    """One JSON line. Only bounded, content-free fields; a field the hook does not know is omitted."""

    return diagnostic_line(
        component(client),
        EVENT,
        outcome,
        http_status=http_status,
        context_status=context_status,
        content_bytes=content_bytes,
    )


def session_id_of(payload: dict[str, Any]) -> str | None:
    session_id = payload.get("session_id")
    return session_id if isinstance(session_id, str) and session_id.strip() else None


def remember(environ: dict[str, str], session_id: str | None, scope_id: str, content: str | None) -> None:
    """Keep the citations of the context injected for this turn (none: forget the last one), so
    the Stop hook only counts the use of what this turn's prompt was given."""

    if session_id is None:
        return
    citations = hook_state.citations_of_content(content) if content is not None else []
    now = time.time()
    hook_state.save(environ, session_id, hook_state.SessionState(scope_id, int(now), citations), now)


def run(stdin_bytes: bytes, environ: dict[str, str], client: str = CODEX) -> tuple[str | None, str | None]:
    """Return (stdout text, stderr diagnostic line); exactly one of them is set."""

    def skipped() -> tuple[None, str]:
        return None, diagnostic("skipped", client=client)

    try:
        payload = json.loads(stdin_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return skipped()
    if not isinstance(payload, dict) or not event_name_is(payload, "UserPromptSubmit"):
        return skipped()
    session_id = session_id_of(payload)
    prompt = payload.get("prompt")
    query = prompt[:MAX_QUERY_CHARS] if isinstance(prompt, str) else ""
    url = server_url(environ)
    if not query.strip() or url is None:
        if session_id is not None:
            hook_state.clear(environ, session_id)
        return skipped()
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd.strip():
        cwd = os.getcwd()
    budget = max_bytes(environ)
    scope_id = resolve_scope_id(cwd, environ)
    body = {"scope_id": scope_id, "query": query, "max_bytes": budget}
    try:
        status, raw = post_json(url, PREPARE_PATH, body, token(environ), timeout_seconds(environ), USER_AGENT)
        context_status, content, content_bytes = interpret_response(status, raw, budget)
    except HookFailure as failure:
        remember(environ, session_id, scope_id, None)
        return None, diagnostic(failure.outcome, client=client, http_status=failure.http_status)
    remember(environ, session_id, scope_id, content)
    if context_status == "empty":
        return None, diagnostic(
            "empty", client=client, http_status=200, context_status="empty", content_bytes=0
        )
    output = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": content}}
    return json.dumps(output), None


def main(client: str = CODEX) -> int:
    try:
        stdout_text, stderr_line = run(sys.stdin.buffer.read(), dict(os.environ), client)
    except Exception:  # noqa: BLE001 - fail open on anything unexpected
        stdout_text, stderr_line = None, diagnostic("invalid_response", client=client)
    try:
        if stdout_text is not None:
            sys.stdout.write(stdout_text + "\n")
            sys.stdout.flush()
        if stderr_line is not None:
            sys.stderr.write(stderr_line + "\n")
            sys.stderr.flush()
    except Exception:  # noqa: BLE001, S110 - a closed pipe must not turn into a non-zero exit
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
