"""The one mapping from exceptions to the error envelope ``{"error": {code, message, details}}``."""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, ProgrammingError
from django.http import JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from powercontext.exceptions import PowerContextError, RuntimeNotReady, Unauthorized

logger = logging.getLogger("powercontext.api")


NOT_FOUND_MESSAGE = "The requested resource was not found."


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


def _is_unavailable(exc: BaseException) -> bool:
    """Database unreachable or not migrated: a 503, not a 500."""
    if isinstance(exc, (OperationalError, InterfaceError)):
        return True
    if isinstance(exc, ProgrammingError):
        text = str(exc).lower()
        return "does not exist" in text or "no such table" in text
    return "no such table" in str(exc).lower() if isinstance(exc, DatabaseError) else False


def error_parts(exc: BaseException) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, envelope, headers) for any exception: the one mapping every transport uses."""
    if isinstance(exc, PowerContextError):
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else {}
        return exc.status, envelope(exc.code, exc.message, exc.details), headers
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return 405, envelope("method_not_allowed", "This method is not allowed here.", None), {}
    if isinstance(exc, drf_exceptions.NotFound):
        return 404, envelope("not_found", NOT_FOUND_MESSAGE, None), {}
    if isinstance(exc, drf_exceptions.APIException):
        # Parsing, authentication and throttling come through our own code paths; anything
        # else DRF raises is a malformed request.
        return 422, envelope("invalid_request", "The request violates the API contract.", None), {}
    if isinstance(exc, DatabaseError) and _is_unavailable(exc):
        logger.warning("database unavailable error_class=%s", type(exc).__name__)
        not_ready = RuntimeNotReady()
        return 503, envelope(not_ready.code, not_ready.message, None), {}
    logger.error("unhandled error error_class=%s", type(exc).__name__)
    return 500, envelope("internal_error", PowerContextError.default_message, None), {}


def error_response(exc: BaseException) -> Response:
    status, body, headers = error_parts(exc)
    return Response(body, status=status, headers=headers)


def exception_handler(exc: BaseException, context: dict[str, Any]) -> Response:
    return error_response(exc)


def json_not_found(request: Any, exception: Any = None) -> JsonResponse:
    return JsonResponse(envelope("not_found", NOT_FOUND_MESSAGE, None), status=404)


def json_server_error(request: Any) -> JsonResponse:
    return JsonResponse(envelope("internal_error", PowerContextError.default_message, None), status=500)
