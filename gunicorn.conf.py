"""gunicorn settings read from the working directory (``gunicorn powercontext.wsgi`` run from the
repository root). Command-line options still apply on top.

- Its own log lines carry no request path or query string (powercontext/core/gunicorn_logging.py).
- Each worker, before it accepts a request, imports the URL configuration, compiles the Inbox
  templates, loads the embedding model and fills its caches for the most recently active scopes
  (powercontext/warmup.py ``warm_up_worker``): neither its first Inbox page nor its first prepare
  pays for them. That counts against gunicorn's ``--timeout`` (default 30 s): the preload stops
  after ``POWERCONTEXT_PRELOAD_SECONDS``.
"""

from typing import Any

from powercontext.core.gunicorn_logging import ACCESS_LOG_FORMAT

logger_class = "powercontext.core.gunicorn_logging.PrivateLogger"
access_log_format = ACCESS_LOG_FORMAT


def post_worker_init(worker: Any) -> None:
    """Warm each worker up once it has loaded the application (with or without ``--preload``:
    the model is per process)."""
    from powercontext import warmup

    warmup.warm_up_worker()
