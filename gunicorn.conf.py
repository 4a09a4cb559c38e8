"""gunicorn settings read from the working directory (``gunicorn powercontext.wsgi`` run from the
repository root). Command-line options still apply on top.

- Its own log lines carry no request path or query string (powercontext/core/gunicorn_logging.py).
- Each worker imports the URL configuration and compiles the Inbox templates as it starts, then
  loads the embedding model in a background thread (powercontext/warmup.py): its first Inbox page
  does not wait for the model, and its first prepare does not pay for loading it (unless it comes
  before the load has finished, when it waits for it).
"""

from typing import Any

from powercontext.core.gunicorn_logging import ACCESS_LOG_FORMAT

logger_class = "powercontext.core.gunicorn_logging.PrivateLogger"
access_log_format = ACCESS_LOG_FORMAT


def post_worker_init(worker: Any) -> None:
    """Warm each worker up once it has loaded the application (with or without ``--preload``:
    the model is per process); the model loads in the background."""
    from powercontext import warmup

    warmup.warm_up()
