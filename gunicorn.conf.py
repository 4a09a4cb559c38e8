"""gunicorn settings read from the working directory (``gunicorn powercontext.wsgi`` run from the
repository root). Command-line options still apply on top (``--threads``, ``-k``, ...).

- Threaded workers (``gthread``), ``POWERCONTEXT_GUNICORN_THREADS`` threads each (default 4): a
  request that waits on a hung database (at most ``POWERCONTEXT_DB_ANSWER_TIMEOUT_MS``) holds one
  thread, not the whole worker, so ``/health/live`` still answers at once while a worker has a
  thread free — that is, while fewer requests hang than it has threads (docs/operators.md,
  "Worker model"). Each thread has its own database connection.
- Its own log lines carry no request path or query string (powercontext/core/gunicorn_logging.py).
- Each worker, before it accepts a request, imports the URL configuration, compiles the Inbox
  templates, loads the embedding model and fills its caches for the most recently active scopes
  (powercontext/warmup.py ``warm_up_worker``): neither its first Inbox page nor its first prepare
  pays for them. That counts against gunicorn's ``--timeout`` (default 30 s): the preload stops
  after ``POWERCONTEXT_PRELOAD_SECONDS``. Then everything the worker holds so far is moved out of
  the cyclic garbage collector's reach (``gc.freeze``): a full collection would otherwise walk
  those ~130,000 objects (~0.1 s measured on a loaded 2-core machine) and stop every thread of
  the worker meanwhile, a ``/health/live`` answer included.
"""

import gc
import os
from typing import Any

from powercontext.core.gunicorn_logging import ACCESS_LOG_FORMAT

DEFAULT_THREADS = 4


def threads_from_environment() -> int:
    """``POWERCONTEXT_GUNICORN_THREADS`` (a whole number, at least 1); a wrong value stops the
    start rather than running with a guess."""
    raw = os.environ.get("POWERCONTEXT_GUNICORN_THREADS", "").strip()
    if not raw:
        return DEFAULT_THREADS
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"POWERCONTEXT_GUNICORN_THREADS must be a whole number, not {raw!r}") from None
    if value < 1:
        raise SystemExit(f"POWERCONTEXT_GUNICORN_THREADS must be at least 1, not {value}")
    return value


worker_class = "gthread"
threads = threads_from_environment()
logger_class = "powercontext.core.gunicorn_logging.PrivateLogger"
access_log_format = ACCESS_LOG_FORMAT


def post_worker_init(worker: Any) -> None:
    """Warm each worker up once it has loaded the application (with or without ``--preload``:
    the model is per process)."""
    from powercontext import warmup

    warmup.warm_up_worker()
    gc.collect()  # what is garbage already is not kept for ever
    gc.freeze()


def child_exit(server: Any, worker: Any) -> None:
    """A worker that exited (``--max-requests``, a crash) leaves ``/metrics``' live gauges: its
    per-process gauge files are dropped, its counters stay summed."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]
