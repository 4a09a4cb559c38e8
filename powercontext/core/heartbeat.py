"""Heartbeats: a row per background process in the database, so an operator (the health detail
view, /metrics) sees a dead worker or a stuck rebuild without reading logs.

- each Celery worker writes ``worker:<node name>`` every ``POWERCONTEXT_WORKER_HEARTBEAT_SECONDS``
  from a thread (``WorkerHeartbeat``), and deletes it on a clean shutdown; a write that fails (a
  database blip) is retried every ``RETRY_SECONDS`` until one succeeds, so the row moves again
  within a second of the database coming back; a worker counts as alive while its row is at
  most two periods old (``worker_alive``: one missed beat is a blip, not a dead worker), so a
  killed worker's row is reported stale after two periods;
- an index rebuild or verify holds ``rebuild`` while it runs (``holding``);
- the readiness probe writes ``ready-probe``: its proof that the database accepts writes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from powercontext.core.background import PerProcess, Runner
from powercontext.core.exceptions import DatabaseFull
from powercontext.core.models import ServiceHeartbeat

logger = logging.getLogger("powercontext.heartbeat")

WORKER_PREFIX = "worker:"
REBUILD = "rebuild"
READY_PROBE = "ready-probe"
# After a failed heartbeat write the worker tries again this often (not a period later).
RETRY_SECONDS = 1.0
# Heartbeats a worker may miss before it is reported stale (a database blip costs one).
MISSED_BEATS_TOLERATED = 1


def worker_alive(age_seconds: float, period_seconds: float) -> bool:
    """Whether a worker whose heartbeat is ``age_seconds`` old counts as alive: within one period
    plus ``MISSED_BEATS_TOLERATED`` more, and a second of slack for the write itself."""
    return age_seconds <= period_seconds * (1 + MISSED_BEATS_TOLERATED) + 1


def beat(name: str) -> None:
    """Record that ``name`` is alive now (one upsert, its own transaction)."""
    with transaction.atomic(durable=True):
        ServiceHeartbeat.objects.update_or_create(name=name, defaults={"seen_at": timezone.now()})


def write_probe(*, timeout_ms: int) -> None:
    """The readiness probe's proof that the database accepts writes: one upsert, bounded by
    ``timeout_ms`` on PostgreSQL. Raises what the database raised, or ``DatabaseFull`` when a
    SQLite file has reached its page limit: the probe's own row may still fit in a page with
    room while no new row of the service would."""
    with transaction.atomic(durable=True):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(timeout_ms)])
        ServiceHeartbeat.objects.update_or_create(name=READY_PROBE, defaults={"seen_at": timezone.now()})
        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                pages = [
                    cursor.execute(f"PRAGMA {name}").fetchone()[0]
                    for name in ("page_count", "max_page_count", "freelist_count")
                ]
            if pages[0] >= pages[1] and pages[2] == 0:
                raise DatabaseFull()


def clear(name: str) -> None:
    with transaction.atomic(durable=True):
        ServiceHeartbeat.objects.filter(name=name).delete()


def seen(prefix: str) -> dict[str, datetime]:
    """Last heartbeat of every name starting with ``prefix``."""
    return dict(ServiceHeartbeat.objects.filter(name__startswith=prefix).values_list("name", "seen_at"))


@contextmanager
def holding(name: str) -> Iterator[None]:
    """Mark ``name`` as in progress for the duration of the block (best effort: a failure to
    write the mark never fails the work)."""
    try:
        beat(name)
    except Exception as exc:
        logger.warning("heartbeat write failed error_class=%s", type(exc).__name__)
    try:
        yield
    finally:
        try:
            clear(name)
        except Exception as exc:
            logger.warning("heartbeat clear failed error_class=%s", type(exc).__name__)


class WorkerHeartbeat(Runner):
    """A Celery worker's heartbeat thread (started by ``powercontext.celery`` when the worker is
    ready)."""

    name = "powercontext-heartbeat"
    logger = logger
    failure = "worker heartbeat failed"

    def __init__(self, node: str) -> None:
        super().__init__()
        self.period = float(settings.POWERCONTEXT_WORKER_HEARTBEAT_SECONDS)
        self.interval = self.period
        self.key = WORKER_PREFIX + node

    def on_start(self) -> None:
        self.step()

    def step(self) -> bool:
        """One heartbeat write. A failure (raised, logged by the runner, which also closes the
        broken connection) shortens the wait before the next try to ``RETRY_SECONDS``; the first
        success goes back to one per period."""
        try:
            beat(self.key)
        except Exception:
            self.interval = min(RETRY_SECONDS, self.period)
            raise
        self.interval = self.period
        return False

    def on_stop(self) -> None:
        clear(self.key)


_heartbeats: PerProcess[WorkerHeartbeat] = PerProcess()


def start_worker_heartbeat(node: str) -> WorkerHeartbeat:
    return _heartbeats.get(lambda: WorkerHeartbeat(node))


def stop_worker_heartbeat(timeout: float | None = 10) -> None:
    _heartbeats.stop(timeout)
