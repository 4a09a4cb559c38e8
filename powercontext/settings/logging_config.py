"""The logging configuration: one console handler whose records all pass the privacy filter
(nothing untrusted: no query, snippet, scope id, entry id or body) and carry the request id."""

from __future__ import annotations

from typing import Any


def logging_config(*, level: str, log_format: str) -> dict[str, Any]:
    """``LOGGING`` for ``level`` and ``log_format`` ("plain" or "json")."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        # Django's request and security records carry paths (with ids), rejected Hosts and Origins,
        # and exception messages: every record that reaches a handler passes this rewrite first.
        "filters": {
            "request_privacy": {"()": "powercontext.core.log_privacy.RequestRecordFilter"},
            # The request id (X-PowerContext-Request-ID) on every line written while serving one.
            "request_id": {"()": "powercontext.core.log_format.RequestIdFilter"},
        },
        "formatters": {
            "plain": {"format": "%(asctime)s [%(request_id)s] %(levelname)s %(name)s %(message)s"},
            "json": {"()": "powercontext.core.log_format.JsonFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["request_privacy", "request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # 4xx answers are already in powercontext.access by route; crashes stay (rewritten).
            "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
            "django.security": {"handlers": ["console"], "level": "WARNING", "propagate": False},
            # At DEBUG these print template contexts (with the request) and SQL parameters.
            "django.template": {"level": "INFO"},
            "django.db.backends": {"level": "INFO"},
            # django-axes logs usernames, addresses and user agents; refusals are logged by
            # powercontext.core.login_throttle without them.
            "axes": {"level": "ERROR"},
            # runserver's own request lines carry query strings (Inbox filters hold scope ids);
            # powercontext.access logs every request by route name instead.
            "django.server": {"handlers": ["console"], "level": "CRITICAL", "propagate": False},
        },
    }
