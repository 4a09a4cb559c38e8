"""Content-Security-Policy for the browser pages: the Review Inbox, log-in, admin and API docs.

Each response gets a fresh nonce (``request.csp_nonce``), which the base template puts on its one
inline ``<script>`` (the keyboard shortcuts, the Inbox and Undo scripts) and its inline
``<style>`` blocks. Nothing else runs: no inline script without the nonce, no ``eval``, no other
origin, no plugins, no framing, no ``<base>``, forms post only here. So text that slips through
the Markdown sanitizer (issue 20, N3) still cannot run.

- Inbox, log-in and error pages: scripts and styles by nonce, plus files from here.
- Admin: Django admin's own static scripts (``'self'``); its templates use ``style`` attributes,
  so styles there allow inline (styles cannot run code).
- ``/v1/docs``: Redoc's local bundle; it injects its own styles and runs a worker from a blob.

JSON answers (``/v1``, ``/mcp``, ``/health``) get no policy: they render nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"
_COMMON = (
    "default-src 'none'; img-src 'self' data:; font-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)


def policy(path: str, nonce: str) -> str | None:
    """The policy for a page at ``path`` (None: not an HTML page of ours)."""
    if path.startswith("/admin/"):
        return f"{_COMMON}; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'"
    if path.rstrip("/") == "/v1/docs":
        return (
            f"{_COMMON}; script-src 'self'; style-src 'self' 'unsafe-inline'; worker-src blob:; "
            "img-src 'self' data: https://cdn.redoc.ly"
        )
    if path.startswith(("/v1/", "/mcp", "/health")):
        return None
    return f"{_COMMON}; script-src 'nonce-{nonce}'; style-src 'self' 'nonce-{nonce}'"


class ContentSecurityPolicyMiddleware:
    """Sets ``request.csp_nonce`` and the policy header of HTML responses (see ``policy``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        nonce = secrets.token_urlsafe(16)
        request.csp_nonce = nonce  # type: ignore[attr-defined]
        response = self.get_response(request)
        content_type: Any = response.get("Content-Type", "")
        if HEADER not in response and str(content_type).startswith("text/html"):
            value = policy(request.path_info, nonce)
            if value is not None:
                response[HEADER] = value
        return response
