"""Publishing a task from the web tier without ever waiting on the broker.

The database is the queue of record: every piece of background work (vectors still missing,
pipeline sessions waiting, aggregates to prune) is a state in the database that a periodic
sweep finds again. A broker message only *wakes* a worker sooner. So a request that publishes
after its commit must not wait for the broker, and must not fail because of it:

- one short-lived connection per publish, with short connect and socket timeouts
  (``POWERCONTEXT_BROKER_PUBLISH_TIMEOUT``) and no retries, neither Celery's publish retries
  nor kombu's connection retries: a refused connection costs about a millisecond, a hung broker
  at most the timeout;
- no result backend and no result subscription (``task_ignore_result``);
- no countdown or ETA: a worker holds a countdown message unacknowledged until it is due, and
  with celery/kombu 5.7.0 a broker restart while it holds one ends the worker
  (docs/operations.md, "Broker restarts");
- after a failure, publishing is skipped for ``POWERCONTEXT_BROKER_BACKOFF_SECONDS`` (one log
  line per failure, never per skipped signal), so during an outage a write costs nothing; the
  sweeps catch up once the broker is back.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings

logger = logging.getLogger("powercontext.broker")

_lock = threading.Lock()
_down_until = float("-inf")
# Counters read by the metrics endpoint: publishes done, failed, and skipped while backing off.
counts = {"sent": 0, "failed": 0, "skipped": 0}


def _options(timeout: float) -> dict[str, Any]:
    return {
        "socket_connect_timeout": timeout,
        "socket_timeout": timeout,
        "retry_on_timeout": False,
        "max_retries": 0,  # kombu's ensure_connection: fail at once
    }


def queue_depths(queues: tuple[str, ...]) -> dict[str, int] | None:
    """Messages waiting per queue, or None when the broker does not answer (bounded like a
    publish). A queue the broker has never seen counts 0."""
    from powercontext.celery import app

    timeout = float(settings.POWERCONTEXT_BROKER_PUBLISH_TIMEOUT)
    depths: dict[str, int] = {}
    try:
        with app.connection_for_write(connect_timeout=timeout, transport_options=_options(timeout)) as conn:
            conn.ensure_connection(max_retries=1)
            channel = conn.default_channel
            for queue in queues:
                try:
                    depths[queue] = int(channel.queue_declare(queue=queue, passive=True).message_count)
                except conn.channel_errors:
                    depths[queue] = 0
    except Exception as exc:
        logger.info("broker check failed error_class=%s", type(exc).__name__)
        return None
    return depths


def publish(task: Any, args: tuple[Any, ...]) -> bool:
    """Send ``task(*args)`` now; False (logged, never raised) when the broker is unavailable."""
    global _down_until
    now = time.monotonic()
    with _lock:
        if now < _down_until:
            counts["skipped"] += 1
            return False
    from powercontext.celery import app  # the project's broker, whichever app the task is bound to

    timeout = float(settings.POWERCONTEXT_BROKER_PUBLISH_TIMEOUT)
    try:
        with app.connection_for_write(connect_timeout=timeout, transport_options=_options(timeout)) as conn:
            task.apply_async(args, connection=conn, retry=False, ignore_result=True)
    except Exception as exc:
        with _lock:
            _down_until = time.monotonic() + float(settings.POWERCONTEXT_BROKER_BACKOFF_SECONDS)
            counts["failed"] += 1
        # The class only: a broker error message carries its host and sometimes credentials.
        logger.warning(
            "broker publish failed error_class=%s backoff_s=%s (the periodic sweep catches up)",
            type(exc).__name__,
            settings.POWERCONTEXT_BROKER_BACKOFF_SECONDS,
        )
        return False
    with _lock:
        counts["sent"] += 1
    return True


def reset() -> None:
    """Forget a previous failure (tests)."""
    global _down_until
    with _lock:
        _down_until = float("-inf")
