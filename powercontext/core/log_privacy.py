"""A logging filter that keeps request values out of Django's request and security log lines.

``django.request`` and ``django.security.*`` print the request path (Review Inbox paths carry
candidate ids, query strings carry scope ids), the rejected ``Host``, the rejected ``Origin`` or
``Referer``, and exception messages that may quote any of them. The filter rewrites those
records to what an operator needs: a fixed reason, the route *name*, the status and, for a
crash, the exception class and its stack frames (code locations, never messages).
"""

from __future__ import annotations

import logging
import re
import traceback
from http import HTTPStatus
from types import TracebackType
from typing import Any

from django.middleware import csrf

WITHHELD = "[withheld]"

# Django's CSRF reasons: the fixed ones are kept, the ones that quote the Origin or Referer keep
# their wording with the value withheld, any other (a later Django) is withheld entirely.
_CSRF_TEMPLATES = sorted(
    value for name, value in vars(csrf).items() if name.startswith("REASON_") and isinstance(value, str)
)
_CSRF_TOKEN_FORMAT = re.compile(
    r"CSRF (?:cookie|token from (?:POST|the '[A-Za-z0-9-]+' HTTP header))"
    r" (?:has incorrect length|has invalid characters|incorrect)\."
)


def csrf_reason(reason: str) -> str:
    for template in _CSRF_TEMPLATES:
        if "%s" not in template:
            if reason == template:
                return reason
        elif re.fullmatch(re.escape(template).replace("%s", ".*"), reason, re.DOTALL):
            return template.replace("%s", WITHHELD)
    if _CSRF_TOKEN_FORMAT.fullmatch(reason):
        return reason
    return "[unrecognized reason withheld]"


def _route(record: logging.LogRecord) -> str:
    match = getattr(getattr(record, "request", None), "resolver_match", None)
    return match.view_name if match is not None and match.view_name else "unresolved"


def _class_name(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def _frames_only(exc: BaseException, tb: TracebackType | None) -> str:
    """The stack of a crash without any exception message (messages may quote request data)."""
    causes = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(causes) < 5:
        causes.append(_class_name(cause))
        cause = cause.__cause__ or cause.__context__
    last = _class_name(exc) + (f" (caused by {', '.join(causes)})" if causes else "")
    frames = "".join(traceback.format_list(traceback.extract_tb(tb)))
    return f"Traceback (exception messages withheld):\n{frames}{last}"


class RequestRecordFilter(logging.Filter):
    """Rewrites ``django.request`` and ``django.security.*`` records in place; passes the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        if name == "celery.app.trace" and isinstance(record.args, dict) and "exc" in record.args:
            self._rewrite_task_failure(record)
            return True
        if name == "django.request" and getattr(record, "status_code", None) == 503:
            # A 503 is a refusal the service already logged once with its cause (database
            # unavailable, not ready): no second line, and no traceback per refused request.
            return False
        if name == "django.request":
            self._rewrite_request(record)
        elif name == "django.security.csrf":
            reason = csrf_reason(str(record.args[0])) if record.args else WITHHELD
            self._replace(record, "csrf failure route=%s status=%s reason=%s", reason)
        elif name.startswith("django.security."):
            kind = name.rsplit(".", 1)[1]
            self._replace(record, "suspicious request kind=%s route=%s status=%s", kind, first=True)
        return True

    def _rewrite_request(self, record: logging.LogRecord) -> None:
        try:
            phrase = HTTPStatus(getattr(record, "status_code", None)).phrase
        except ValueError:
            phrase = "Error"
        exc_info = record.exc_info
        if exc_info and exc_info[1] is not None:
            self._replace(record, phrase + " route=%s status=%s error_class=%s", _class_name(exc_info[1]))
            record.exc_text = _frames_only(exc_info[1], exc_info[2])
        else:
            self._replace(record, phrase + " route=%s status=%s")

    @staticmethod
    def _rewrite_task_failure(record: logging.LogRecord) -> None:
        # Celery's failure line quotes the exception (database hosts, constraint keys with
        # their values) and the task's arguments (scope ids): keep the task, the class, the frames.
        args = record.args if isinstance(record.args, dict) else {}
        exc_info = record.exc_info
        error = _class_name(exc_info[1]) if exc_info and exc_info[1] is not None else WITHHELD
        record.msg = "task failed name=%s id=%s error_class=%s"
        record.args = (args.get("name", WITHHELD), args.get("id", WITHHELD), error)
        record.exc_text = (
            _frames_only(exc_info[1], exc_info[2]) if exc_info and exc_info[1] is not None else None
        )
        record.exc_info = None
        if hasattr(record, "data"):
            record.data = {}

    @staticmethod
    def _replace(record: logging.LogRecord, message: str, *extra: Any, first: bool = False) -> None:
        route_status = (_route(record), getattr(record, "status_code", None))
        record.msg = message
        record.args = (*extra, *route_status) if first else (*route_status, *extra)
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
