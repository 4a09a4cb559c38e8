"""gunicorn's own log lines without request paths or query strings (loaded by gunicorn.conf.py).

Django's logs never hold a path, a query string or a body (``log_privacy``), but gunicorn writes
its own lines: "Error handling request GET /v1/memory/search?q=…" when a worker dies at its
timeout or a request crashes below Django, and "Invalid request from ip=…: <the request line>"
for malformed requests. ``PrivateLogger`` keeps those lines and their tracebacks, without the
request. The access log format (``gunicorn.conf.py``) names no path, query or referrer either.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

# Access log: client, method, status, bytes, duration. No %(r)s, %(U)s, %(q)s, %(f)s.
ACCESS_LOG_FORMAT = '%(h)s "%(m)s" %(s)s %(B)s %(M)sms'
_WITHHELD = {
    "Error handling request": "Error handling request (method and path withheld)",
    "Invalid request from ip": "Invalid request (details withheld)",
}


def _private(msg: Any, args: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    text = str(msg)
    for prefix, replacement in _WITHHELD.items():
        if text.startswith(prefix):
            return replacement, ()
    return msg, args


class PrivateLogger(Logger):
    """gunicorn's logger with request paths and query strings withheld from its error log."""

    def error(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        msg, args = _private(msg, args)
        super().error(msg, *args, **kwargs)

    def warning(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        msg, args = _private(msg, args)
        super().warning(msg, *args, **kwargs)

    def exception(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        msg, args = _private(msg, args)
        super().exception(msg, *args, **kwargs)

    def critical(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        msg, args = _private(msg, args)
        super().critical(msg, *args, **kwargs)
