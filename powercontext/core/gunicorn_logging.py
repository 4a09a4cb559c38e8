"""gunicorn's own log lines without request paths or query strings (loaded by gunicorn.conf.py).

Django's logs never hold a path, a query string or a body (``log_privacy``), but gunicorn writes
its own lines: "Error handling request GET /v1/memory/search?q=…" when a worker dies at its
timeout or a request crashes below Django, and "Invalid request from ip=…: <the request line>"
for malformed requests. ``PrivateLogger`` keeps those lines and their tracebacks, without the
request. The access log format (``gunicorn.conf.py``) names no path, query or referrer either;
it ends with the request id the response carried (``X-PowerContext-Request-ID``), the same id
as Django's lines of that request.

With ``LOG_FORMAT=json`` (the environment variable Django's settings read too) gunicorn's access
and error lines are JSON objects like Django's (``JsonFormatter``), the access line's
``request_id`` field taken from the response header.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from gunicorn.glogging import Logger

from powercontext.core.log_format import JsonFormatter, RequestIdFilter

# gunicorn's atom for a response header (lower case).
REQUEST_ID_ATOM = "{x-powercontext-request-id}o"
# Access log: client, method, status, bytes, duration, request id. No %(r)s, %(U)s, %(q)s, %(f)s,
# and no request header.
ACCESS_LOG_FORMAT = '%(h)s "%(m)s" %(s)s %(B)s %(M)sms request_id=%(' + REQUEST_ID_ATOM + ")s"
_WITHHELD = {
    "Error handling request": "Error handling request (method and path withheld)",
    "Invalid request from ip": "Invalid request (details withheld)",
}


def _private(msg: Any, args: Any) -> tuple[Any, Any]:
    text = str(msg)
    for prefix, replacement in _WITHHELD.items():
        if text.startswith(prefix):
            return replacement, ()
    return msg, args


class _WithholdRequest(logging.Filter):
    """Rewrites a line that would name the request (its traceback is kept)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = _private(record.msg, record.args)
        return True


class _AccessRequestId(logging.Filter):
    """Gives an access record the request id of its response (``-`` when it had none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id: Any = "-"
        if isinstance(record.args, Mapping):
            try:  # gunicorn's atoms answer "-" for a header the response did not have
                request_id = record.args[REQUEST_ID_ATOM]
            except KeyError:
                pass
        record.request_id = str(request_id)
        return True


def json_logs() -> bool:
    return os.environ.get("LOG_FORMAT", "").strip().lower() == "json"


class PrivateLogger(Logger):
    """gunicorn's logger with request paths and query strings withheld from its error log: every
    line of the error log (whatever its level) passes one filter. In JSON mode both logs write
    JSON lines (see the module docstring)."""

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        _add_once(self.error_log, _WithholdRequest)
        _add_once(self.error_log, RequestIdFilter)
        _add_once(self.access_log, _AccessRequestId)

    def setup(self, cfg: Any) -> None:
        # Also run on a configuration reload, which replaces the handlers.
        super().setup(cfg)
        if json_logs():
            for log in (self.error_log, self.access_log):
                for handler in log.handlers:
                    handler.setFormatter(JsonFormatter())


def _add_once(log: logging.Logger, kind: type[logging.Filter]) -> None:
    if not any(isinstance(existing, kind) for existing in log.filters):
        log.addFilter(kind())
