"""gunicorn settings read from the working directory (``gunicorn powercontext.wsgi`` run from the
repository root). Command-line options still apply on top.

- Its own log lines carry no request path or query string (powercontext/core/gunicorn_logging.py).
- Each worker loads the embedding model as it starts, so its first prepare is as fast as the rest.
"""

from typing import Any

from powercontext.core.gunicorn_logging import ACCESS_LOG_FORMAT

logger_class = "powercontext.core.gunicorn_logging.PrivateLogger"
access_log_format = ACCESS_LOG_FORMAT


def post_worker_init(worker: Any) -> None:
    """Load the embedding model in each worker once it has loaded the application (with or
    without ``--preload``: the model is per process)."""
    from powercontext.search import embedding

    embedding.warm_up()
