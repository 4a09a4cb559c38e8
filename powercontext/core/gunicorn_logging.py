"""gunicorn's own log lines without request paths or query strings (loaded by gunicorn.conf.py).

Django's logs never hold a path, a query string or a body (``log_privacy``), but gunicorn writes
its own lines: "Error handling request GET /v1/memory/search?q=…" when a worker dies at its
timeout or a request crashes below Django, and "Invalid request from ip=…: <the request line>"
for malformed requests. ``PrivateLogger`` keeps those lines and their tracebacks, without the
request. The access log format (``gunicorn.conf.py``) names no path, query or referrer either.
"""

from __future__ import annotations

import logging
from typing import Any

from gunicorn.glogging import Logger

# Access log: client, method, status, bytes, duration. No %(r)s, %(U)s, %(q)s, %(f)s.
ACCESS_LOG_FORMAT = '%(h)s "%(m)s" %(s)s %(B)s %(M)sms'
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


class PrivateLogger(Logger):
    """gunicorn's logger with request paths and query strings withheld from its error log: every
    line of the error log (whatever its level) passes one filter."""

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        if not any(isinstance(existing, _WithholdRequest) for existing in self.error_log.filters):
            self.error_log.addFilter(_WithholdRequest())
