"""Request correlation: every response carries ``X-PowerContext-Request-ID``."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse

from context_api import metrics
from powercontext.core.log_format import request_id_var

REQUEST_ID_HEADER = "X-PowerContext-Request-ID"
logger = logging.getLogger("powercontext.access")


def _request_done(**kwargs: object) -> None:
    request_id_var.set("-")


request_finished.connect(_request_done, dispatch_uid="powercontext-request-id-done")


class RequestIdMiddleware:
    """Generate an opaque 16-hex request id, expose it, and log one privacy-safe access line.

    The access line holds the method, the route *name* (never the path's query string or
    body), the status and the latency: no scope, query, snippet or entry id can reach it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = secrets.token_hex(8)
        request.powercontext_request_id = request_id  # type: ignore[attr-defined]
        # Kept until the response is closed (``request_finished``), not reset on the way out:
        # Django logs a 4xx/5xx answer (``django.request``) after the whole middleware chain
        # returned, and that line carries the id too.
        request_id_var.set(request_id)
        return self._respond(request, request_id)

    def _respond(self, request: HttpRequest, request_id: str) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        elapsed = time.perf_counter() - started
        match = getattr(request, "resolver_match", None)
        route_name = match.url_name if match is not None and match.url_name else "unresolved"
        route = route_name
        # MCP: the tool names called (only names of listed tools; never arguments).
        tools = getattr(request, "powercontext_tools", None)
        if tools:
            route = f"{route} tool={','.join(tools)}"
        # The request id the client sees, so an access line can be found from a client report.
        logger.info(
            "request request_id=%s method=%s route=%s status=%s duration_ms=%.1f",
            request_id,
            request.method,
            route,
            response.status_code,
            elapsed * 1000,
        )
        metrics.observe_request(route_name, str(request.method), response.status_code, elapsed)
        return response
