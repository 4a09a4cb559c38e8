"""Log records as operators read them: the request id on every line, plain text or JSON.

``RequestIdFilter`` stamps each record with the id of the request being served on this thread
(``request_id_var``, set by ``context_api.middleware.RequestIdMiddleware``; ``-`` outside a
request), the same value the client sees in ``X-PowerContext-Request-ID``. ``JsonFormatter``
(``LOG_FORMAT=json``) writes one JSON object per line. Both run after the privacy filters, so
they only ever see rewritten messages.
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime

request_id_var: ContextVar[str] = ContextVar("powercontext_request_id", default="-")


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", "-"),
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False)
