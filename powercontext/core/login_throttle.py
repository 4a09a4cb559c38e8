"""Log-in throttling glue for django-axes (settings: AXES_*; README "Configuration").

Axes counts failed log-ins per username and per client address in the database, so every app
server and process shares the counters. This module tells it the client address behind a
reverse proxy and renders the refusal page.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

logger = logging.getLogger("powercontext.security")


def _address(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: ``REMOTE_ADDR``, or behind ``POWERCONTEXT_TRUSTED_PROXY_COUNT`` proxies
    the address the outermost one recorded in ``X-Forwarded-For``.

    Each proxy appends the address it received the request from, so only the last ``count``
    entries are trustworthy; whatever the client itself sent comes before them and is ignored.
    """
    remote = _address(request.META.get("REMOTE_ADDR"))
    count = settings.POWERCONTEXT_TRUSTED_PROXY_COUNT
    if count <= 0:
        return remote
    forwarded = [part for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < count:
        return remote
    return _address(forwarded[-count]) or remote


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """429 in the Inbox's look, for the Inbox and the admin log-in alike."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    match = getattr(request, "resolver_match", None)
    route = match.view_name if match is not None else "unresolved"
    logger.warning("login refused: too many failures route=%s status=%s", route, 429)
    response = render(
        request,
        "registration/locked_out.html",
        {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": max(1, -(-seconds // 60))},
        status=429,
    )
    response["Retry-After"] = str(seconds)
    return response
