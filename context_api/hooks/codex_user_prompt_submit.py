#!/usr/bin/env python3
"""Codex ``UserPromptSubmit`` hook: ask PowerContext for prepared context and inject it unchanged.

Run by Codex with the hook input JSON on stdin::

    python3 context_api/hooks/codex_user_prompt_submit.py < hook-input.json

Standard library only, so it runs with any ``python3`` and needs no virtualenv.

Behaviour (see ``docs/codex-hook.md``):

* one ``POST {POWERCONTEXT_URL}/v1/context/prepare`` per prompt;
* a strictly valid ``ready`` response is printed as Codex ``hookSpecificOutput.additionalContext``,
  byte-for-byte unchanged, with nothing on stderr;
* every other result prints nothing on stdout and one content-free JSON diagnostic line on stderr;
* the hook always exits 0 (fail open): PowerContext problems never block Codex.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import math
import os
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

# The scope id (explicit, git remote or project path) lives beside this file, standard library too.
if __package__:
    from .hook_scope import ENV_SCOPE_ID as ENV_SCOPE_ID
    from .hook_scope import normalize_git_remote as normalize_git_remote
    from .hook_scope import resolve_scope_id as resolve_scope_id
else:  # run as a script (``python3 .../codex_user_prompt_submit.py``): its folder is on sys.path
    from hook_scope import resolve_scope_id  # type: ignore[import-not-found, no-redef]

COMPONENT = "powercontext.codex.recall"
EVENT = "context_prepare"
PREPARED_CONTEXT_SCHEMA = "powercontext.prepared-context.v1"
PREPARE_PATH = "/v1/context/prepare"

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_SECONDS = 0.8
CODEX_MAX_BYTES = 8000  # Codex additionalContext budget; also the hook's upper bound.
CONTRACT_MIN_BYTES = 512  # PrepareContextRequest.max_bytes minimum.
MAX_QUERY_CHARS = 8192  # PrepareContextRequest.query maxLength.
MAX_RESPONSE_BYTES = 1024 * 1024  # A prepared context is at most 8000 bytes; anything huge is wrong.

# Environment variables. POWERCONTEXT_HTTP_URL is the name older upstream hooks used for the URL.
ENV_URL = ("POWERCONTEXT_URL", "POWERCONTEXT_HTTP_URL")
ENV_TOKEN = "POWERCONTEXT_TOKEN"  # noqa: S105 - an environment variable name
ENV_TIMEOUT = "POWERCONTEXT_TIMEOUT_SECONDS"
ENV_MAX_BYTES = "POWERCONTEXT_MAX_BYTES"

NumberT = TypeVar("NumberT", int, float)

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


class _Failure(Exception):
    """Ends the hook with one diagnostic; carries only non-sensitive fields."""

    def __init__(self, outcome: str, http_status: int | None = None) -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.http_status = http_status


# --------------------------------------------------------------------------- configuration


def _env(environ: dict[str, str], name: str) -> str | None:
    value = environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def server_url(environ: dict[str, str]) -> str | None:
    """Return the validated base URL without a trailing slash, or None when it is unusable."""

    raw = next((v for v in (_env(environ, name) for name in ENV_URL) if v is not None), DEFAULT_URL)
    try:
        parts = urlsplit(raw)
        hostname = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for an invalid port
    except ValueError:
        return None
    if parts.scheme not in {"http", "https"} or not hostname:
        return None
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        return None
    return raw.rstrip("/")


def _env_number(environ: dict[str, str], name: str, parse: Callable[[str], NumberT]) -> NumberT | None:
    """The variable read as a number by ``parse``, or None when it is unset or not a number."""

    raw = _env(environ, name)
    if raw is None:
        return None
    try:
        return parse(raw)
    except ValueError:
        return None


def timeout_seconds(environ: dict[str, str]) -> float:
    value = _env_number(environ, ENV_TIMEOUT, float)
    if value is None or not math.isfinite(value) or value <= 0:
        return DEFAULT_TIMEOUT_SECONDS
    return value


def max_bytes(environ: dict[str, str]) -> int:
    """The requested budget: POWERCONTEXT_MAX_BYTES clamped to 512..8000 (Codex limit), default 8000."""

    value = _env_number(environ, ENV_MAX_BYTES, int)
    if value is None:
        return CODEX_MAX_BYTES
    return max(CONTRACT_MIN_BYTES, min(CODEX_MAX_BYTES, value))


# --------------------------------------------------------------------------- HTTP


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None  # a 3xx then surfaces as an HTTPError


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _opener(url: str) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if _is_loopback(urlsplit(url).hostname or ""):
        handlers.append(urllib.request.ProxyHandler({}))  # never send a local call through a proxy
    return urllib.request.build_opener(*handlers)


def _read_bounded(response: http.client.HTTPResponse) -> bytes | None:
    data = response.read(MAX_RESPONSE_BYTES + 1)
    return None if len(data) > MAX_RESPONSE_BYTES else data


def post_prepare(
    url: str, body: dict[str, object], token: str | None, timeout: float
) -> tuple[int, bytes | None]:
    """POST the request; return (status, body or None when oversized). Raises _Failure on transport errors.

    The whole exchange (DNS, connect, send, read) runs in a worker thread so ``timeout`` is a wall-clock
    bound, not a per-socket-operation one.
    """

    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": "powercontext-codex-hook",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(  # noqa: S310 - scheme is validated to http/https
        url + PREPARE_PATH,
        data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
        headers=headers,
        method="POST",
    )
    opener = _opener(url)
    result: dict[str, object] = {}
    done = threading.Event()

    def exchange() -> None:
        try:
            with opener.open(request, timeout=timeout) as response:
                result["status"] = response.status
                result["body"] = _read_bounded(response)
        except urllib.error.HTTPError as error:
            result["status"] = error.code
            result["body"] = None
            error.close()
        except BaseException as error:  # noqa: BLE001 - classified below, never re-raised in this thread
            result["error"] = error
        finally:
            done.set()

    threading.Thread(target=exchange, name="powercontext-prepare", daemon=True).start()
    if not done.wait(timeout):
        raise _Failure("server_unavailable")
    error = result.get("error")
    if error is not None:
        if isinstance(error, OSError):  # refused, reset, timeout, DNS, TLS
            raise _Failure("server_unavailable")
        raise _Failure("invalid_response")  # e.g. a peer that does not speak HTTP
    status, payload = result["status"], result["body"]
    if not isinstance(status, int) or not (payload is None or isinstance(payload, bytes)):
        raise _Failure("invalid_response")
    return status, payload


# --------------------------------------------------------------------------- validation


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_prepared_context(payload: object, budget: int) -> tuple[str, str | None, int]:
    """Strictly check a PreparedContext; return (status, content, content_bytes) or raise _Failure."""

    invalid = _Failure("invalid_response", 200)
    if not isinstance(payload, dict) or set(payload) != {"schema", "status", "content", "content_bytes"}:
        raise invalid
    status, content, content_bytes = payload["status"], payload["content"], payload["content_bytes"]
    if payload["schema"] != PREPARED_CONTEXT_SCHEMA or not _is_int(content_bytes):
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
        raise _Failure("authentication_failed", status)
    if status == 404:
        raise _Failure("version_mismatch", status)
    if status == 503:
        raise _Failure("server_unavailable", status)
    if status != 200 or body is None:
        raise _Failure("invalid_response", status)
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Failure("invalid_response", status) from None
    return validate_prepared_context(payload, budget)


# --------------------------------------------------------------------------- hook entry point


def diagnostic(
    outcome: str,
    *,
    http_status: int | None = None,
    context_status: str | None = None,
    content_bytes: int | None = None,
) -> str:
    """One JSON line. Only bounded, content-free fields; a field the hook does not know is omitted."""

    event: dict[str, object] = {"component": COMPONENT, "event": EVENT, "outcome": outcome}
    if http_status is not None:
        event["http_status"] = http_status
    if context_status is not None:
        event["context_status"] = context_status
    if content_bytes is not None:
        event["content_bytes"] = content_bytes
    return json.dumps(event)


def run(stdin_bytes: bytes, environ: dict[str, str]) -> tuple[str | None, str | None]:
    """Return (stdout text, stderr diagnostic line); exactly one of them is set."""

    try:
        payload = json.loads(stdin_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, diagnostic("skipped")
    if not isinstance(payload, dict):
        return None, diagnostic("skipped")
    event_name = payload.get("hook_event_name")
    if event_name is not None and (
        not isinstance(event_name, str) or event_name.replace("_", "").lower() != "userpromptsubmit"
    ):
        return None, diagnostic("skipped")
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        return None, diagnostic("skipped")
    query = prompt[:MAX_QUERY_CHARS]
    if not query.strip():
        return None, diagnostic("skipped")
    url = server_url(environ)
    if url is None:
        return None, diagnostic("skipped")
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd.strip():
        cwd = os.getcwd()
    budget = max_bytes(environ)
    body = {"scope_id": resolve_scope_id(cwd, environ), "query": query, "max_bytes": budget}
    try:
        status, raw = post_prepare(url, body, _env(environ, ENV_TOKEN), timeout_seconds(environ))
        context_status, content, content_bytes = interpret_response(status, raw, budget)
    except _Failure as failure:
        return None, diagnostic(failure.outcome, http_status=failure.http_status)
    if context_status == "empty":
        return None, diagnostic("empty", http_status=200, context_status="empty", content_bytes=0)
    output = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": content}}
    return json.dumps(output), None


def main() -> int:
    try:
        stdout_text, stderr_line = run(sys.stdin.buffer.read(), dict(os.environ))
    except Exception:  # noqa: BLE001 - fail open on anything unexpected
        stdout_text, stderr_line = None, diagnostic("invalid_response")
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
