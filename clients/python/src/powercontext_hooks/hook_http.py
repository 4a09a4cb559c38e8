"""What the PowerContext hooks share about talking to the server: the environment settings
(``POWERCONTEXT_URL``, ``POWERCONTEXT_TOKEN``, ``POWERCONTEXT_TIMEOUT_SECONDS``), one bounded JSON
POST and the failure that ends a hook with a content-free outcome word. Standard library only,
like the hooks (docs/agents/codex-hook.md).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import math
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeGuard, TypeVar
from urllib.parse import urlsplit

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_SECONDS = 0.8
MAX_RESPONSE_BYTES = 1024 * 1024  # No answer a hook reads is near this; anything bigger is wrong.

# Environment variables. POWERCONTEXT_HTTP_URL is the name older upstream hooks used for the URL.
ENV_URL = ("POWERCONTEXT_URL", "POWERCONTEXT_HTTP_URL")
ENV_TOKEN = "POWERCONTEXT_TOKEN"  # noqa: S105 - an environment variable name
ENV_TIMEOUT = "POWERCONTEXT_TIMEOUT_SECONDS"

NumberT = TypeVar("NumberT", int, float)


class HookFailure(Exception):
    """Ends a hook with one diagnostic; carries only non-sensitive fields."""

    def __init__(self, outcome: str, http_status: int | None = None) -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.http_status = http_status


# --------------------------------------------------------------------------- configuration


def env(environ: dict[str, str], name: str) -> str | None:
    """The variable with surrounding whitespace trimmed, or None when it is unset or blank."""

    value = environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def server_url(environ: dict[str, str]) -> str | None:
    """Return the validated base URL without a trailing slash, or None when it is unusable."""

    raw = next((v for v in (env(environ, name) for name in ENV_URL) if v is not None), DEFAULT_URL)
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


def env_number(environ: dict[str, str], name: str, parse: Callable[[str], NumberT]) -> NumberT | None:
    """The variable read as a number by ``parse``, or None when it is unset or not a number."""

    raw = env(environ, name)
    if raw is None:
        return None
    try:
        return parse(raw)
    except ValueError:
        return None


def timeout_seconds(environ: dict[str, str]) -> float:
    value = env_number(environ, ENV_TIMEOUT, float)
    if value is None or not math.isfinite(value) or value <= 0:
        return DEFAULT_TIMEOUT_SECONDS
    return value


def token(environ: dict[str, str]) -> str | None:
    return env(environ, ENV_TOKEN)


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


def post_json(
    url: str,
    path: str,
    body: dict[str, object],
    bearer: str | None,
    timeout: float,
    user_agent: str,
) -> tuple[int, bytes | None]:
    """POST ``body`` to ``url + path``; return (status, body or None when oversized or an error
    status). Raises HookFailure("server_unavailable") on a transport error or when ``timeout``
    passes, HookFailure("invalid_response") for a peer that does not speak HTTP.

    The whole exchange (DNS, connect, send, read) runs in a worker thread so ``timeout`` is a
    wall-clock bound, not a per-socket-operation one. Redirects are not followed.
    """

    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": user_agent}
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    request = urllib.request.Request(  # noqa: S310 - scheme is validated to http/https
        url + path,
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

    threading.Thread(target=exchange, name="powercontext-hook-http", daemon=True).start()
    if not done.wait(timeout):
        raise HookFailure("server_unavailable")
    error = result.get("error")
    if error is not None:
        if isinstance(error, OSError):  # refused, reset, timeout, DNS, TLS
            raise HookFailure("server_unavailable")
        raise HookFailure("invalid_response")  # e.g. a peer that does not speak HTTP
    status, payload = result["status"], result["body"]
    if not isinstance(status, int) or not (payload is None or isinstance(payload, bytes)):
        raise HookFailure("invalid_response")
    return status, payload


def decode_json(status: int, body: bytes | None) -> object:
    """The JSON value of a response body; HookFailure("invalid_response", status) when there is none."""

    if body is None:
        raise HookFailure("invalid_response", status)
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise HookFailure("invalid_response", status) from None


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def event_name_is(payload: dict[str, Any], expected: str) -> bool:
    """True when the hook input's ``hook_event_name`` is absent or names ``expected``
    (``UserPromptSubmit``, ``user_prompt_submit`` and ``userpromptsubmit`` alike)."""

    name = payload.get("hook_event_name")
    if name is None:
        return True
    return isinstance(name, str) and name.replace("_", "").lower() == expected.lower()


def diagnostic_line(component: str, event: str, outcome: str, **fields: int | str | None) -> str:
    """One JSON line of bounded, content-free fields (the hooks' only stderr output); a field
    the hook does not know (None) is omitted."""
    line: dict[str, object] = {"component": component, "event": event, "outcome": outcome}
    line.update((name, value) for name, value in fields.items() if value is not None)
    return json.dumps(line)
