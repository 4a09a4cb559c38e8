"""The one mapping from exceptions to the error envelope ``{"error": {code, message, details}}``."""

from __future__ import annotations

import logging
import re
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, ProgrammingError
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.urls import reverse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from powercontext.core.db_faults import fault_of
from powercontext.core.exceptions import (
    DatabaseFull,
    DatabaseReadOnly,
    PowerContextError,
    RateLimited,
    RuntimeNotReady,
    Unauthorized,
)

logger = logging.getLogger("powercontext.api")


NOT_FOUND_MESSAGE = "The requested resource was not found."


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


def retry_after() -> dict[str, str]:
    """The header every 503 carries: when a client may try again (seconds)."""
    return {"Retry-After": str(settings.POWERCONTEXT_RETRY_AFTER_SECONDS)}


def database_unavailable(exc: BaseException | None) -> bool:
    return isinstance(exc, DatabaseError) and _is_unavailable(exc)


def _is_unavailable(exc: BaseException) -> bool:
    """Database unreachable, not migrated, read-only or full: a 503, not a 500."""
    if fault_of(exc) is not None or isinstance(exc, (OperationalError, InterfaceError)):
        return True
    if isinstance(exc, ProgrammingError):
        text = str(exc).lower()
        return "does not exist" in text or "no such table" in text
    return "no such table" in str(exc).lower() if isinstance(exc, DatabaseError) else False


def error_parts(exc: BaseException) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, envelope, headers) for any exception: the one mapping every transport uses."""
    if isinstance(exc, PowerContextError):
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else {}
        if exc.status == 503:
            headers = retry_after()
        elif isinstance(exc, RateLimited):
            headers = {"Retry-After": str(exc.retry_after)}
        return exc.status, envelope(exc.code, exc.message, exc.details), headers
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return 405, envelope("method_not_allowed", "This method is not allowed here.", None), {}
    if isinstance(exc, drf_exceptions.NotFound):
        return 404, envelope("not_found", NOT_FOUND_MESSAGE, None), {}
    if isinstance(exc, drf_exceptions.APIException):
        # Parsing, authentication and throttling come through our own code paths; anything
        # else DRF raises is a malformed request.
        return 422, envelope("invalid_request", "The request violates the API contract.", None), {}
    fault = fault_of(exc)
    if fault is not None:
        # The database answers but refuses the write: say which way, so a client (and the
        # operator reading the log) knows reads still work and what to fix.
        logger.warning("database refused a write cause=%s error_class=%s", fault, type(exc).__name__)
        refused = DatabaseReadOnly() if fault == "database_read_only" else DatabaseFull()
        return 503, envelope(refused.code, refused.message, None), retry_after()
    if isinstance(exc, DatabaseError) and _is_unavailable(exc):
        # One line per refused request; Django's own 503 record is dropped by the log filter.
        logger.warning("database unavailable error_class=%s", type(exc).__name__)
        not_ready = RuntimeNotReady()
        return 503, envelope(not_ready.code, not_ready.message, None), retry_after()
    logger.error("unhandled error error_class=%s", type(exc).__name__)
    return 500, envelope("internal_error", PowerContextError.default_message, None), {}


def error_response(exc: BaseException) -> Response:
    status, body, headers = error_parts(exc)
    return Response(body, status=status, headers=headers)


def exception_handler(exc: BaseException, context: dict[str, Any]) -> Response:
    return error_response(exc)


# --- Django's error handlers (powercontext/urls.py) and CSRF failure view ------------------------
# Browser routes (the Review Inbox, its login, the admin) answer HTML pages in the Inbox's look;
# everything else (/v1, /health, unknown paths) answers the JSON envelope. The choice reads only
# the path, never the Host header, which may be the very thing that was rejected.

_BROWSER_ROUTE = re.compile(r"/(?:review|accounts|admin)(?:/|$)")
REVIEW_PERMISSION = "review.review_candidate"


@dataclass(frozen=True)
class ErrorAnswer:
    status: int
    code: str
    message: str
    title: str
    text: str


BAD_REQUEST = ErrorAnswer(
    400,
    "bad_request",
    "The request is malformed.",
    "Bad request",
    "The server could not understand this request.",
)
FORBIDDEN = ErrorAnswer(
    403,
    "forbidden",
    "This operation is not allowed.",
    "Not allowed",
    "Your account may not open this page. Ask an administrator if you need access.",
)
CSRF_FAILED = ErrorAnswer(
    403,
    "forbidden",
    "This operation is not allowed.",
    "Not allowed",
    "The form had expired or was sent from another site. Reload the page and try again.",
)
NOT_FOUND = ErrorAnswer(
    404,
    "not_found",
    "The requested resource was not found.",
    "Page not found",
    "There is nothing at this address. The link may be wrong or out of date.",
)
SERVER_ERROR = ErrorAnswer(
    500,
    "internal_error",
    PowerContextError.default_message,
    "Something went wrong",
    "The server failed to answer this request. Please try again in a moment.",
)
_PLAIN_SERVER_ERROR = "<!doctype html><title>Something went wrong</title><h1>Something went wrong</h1>"


def is_browser_route(request: HttpRequest) -> bool:
    return _BROWSER_ROUTE.match(request.path_info) is not None


def _can_review(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.has_perm(REVIEW_PERMISSION))


def _answer(request: HttpRequest, answer: ErrorAnswer, *, request_context: bool) -> HttpResponse:
    if not is_browser_route(request):
        return JsonResponse(envelope(answer.code, answer.message, None), status=answer.status)
    context = {"status": answer.status, "title": answer.title, "text": answer.text}
    if request_context:
        # The usual top bar (user, navigation) for the logged-in user.
        return render(
            request, "error.html", {**context, "can_review": _can_review(request)}, status=answer.status
        )
    return HttpResponse(loader.render_to_string("error.html", context), status=answer.status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    # Raised for a disallowed Host before authentication ran: render from nothing but the path.
    return _answer(request, BAD_REQUEST, request_context=False)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, FORBIDDEN, request_context=True)


_CANDIDATE_ACTION = re.compile(r"/review/candidates/(?P<pk>[0-9]{1,18})/[a-z]+/$")
# What a refused form posted that is the reviewer's own typing (shown back so it is never lost).
_NOT_DRAFT = ("csrfmiddlewaretoken", "expected_version", "item", "items")
_FILTER_KEYS = ("status", "family", "scope", "q", "age")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A refused form (typically a tab left open while the reviewer logged out, or in again, in
    another tab, which rotates the CSRF secret): say so, link back to the page the form was on
    and show what was typed. The Inbox pages also keep drafts in the browser (localStorage)."""
    match = _CANDIDATE_ACTION.match(request.path_info)
    if not is_browser_route(request) or match is None:
        return _answer(request, CSRF_FAILED, request_context=True)
    query = urlencode([(k, v) for k, v in request.GET.items() if k in _FILTER_KEYS])
    back = reverse("review:candidate", args=[int(match["pk"])]) + (f"?{query}" if query else "")
    draft = [(k, v) for k, v in request.POST.items() if k not in _NOT_DRAFT and str(v).strip()]
    if not _typed_here(request):
        draft = []  # another site's form: its text is not "what you typed" (issue 20, N9)
    context = {
        "back": back,
        "pk": int(match["pk"]),
        "draft": draft,
        "can_review": _can_review(request),
    }
    return render(request, "review/form_expired.html", context, status=403)


def _typed_here(request: HttpRequest) -> bool:
    """Whether a refused form was typed by the signed-in user on one of our pages: the user is
    logged in and the browser says the form came from this origin (``Sec-Fetch-Site:
    same-origin``, else an ``Origin`` or ``Referer`` on this host). A form another site posts
    through the reviewer's browser fails this, so its text is never shown back as theirs."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return False
    site = str(request.META.get("HTTP_SEC_FETCH_SITE", "")).strip().lower()
    if site:
        return site == "same-origin"
    own = f"{request.scheme}://{request.get_host()}"
    origin = str(request.META.get("HTTP_ORIGIN", ""))
    if origin:
        return origin.rstrip("/") == own
    referer = str(request.META.get("HTTP_REFERER", ""))
    return referer == own or referer.startswith(own + "/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, NOT_FOUND, request_context=True)


UNAVAILABLE = ErrorAnswer(
    503,
    RuntimeNotReady.code,
    RuntimeNotReady.default_message,
    "Temporarily unavailable",
    "The service cannot reach its database right now. Please try again in a moment.",
)


def server_error(request: HttpRequest) -> HttpResponse:
    # No request context: the failure may be the database, which the session and user need.
    # Django calls this handler while the exception is being handled: a database that is down
    # is a 503 with Retry-After in the page's own look, not a crash.
    exc = sys.exc_info()[1]
    answer = SERVER_ERROR
    if database_unavailable(exc):
        assert exc is not None
        fault = fault_of(exc)
        if fault is not None:
            logger.warning("database refused a write cause=%s error_class=%s", fault, type(exc).__name__)
        else:
            logger.warning("database unavailable error_class=%s", type(exc).__name__)
        answer = UNAVAILABLE
    try:
        response = _answer(request, answer, request_context=False)
    except Exception:
        return HttpResponseServerError(_PLAIN_SERVER_ERROR)
    if answer.status == 503:
        for name, value in retry_after().items():
            response[name] = value
    return response
