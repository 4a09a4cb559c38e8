"""Prepare aggregates, the in-process half: buffer each prepare's metadata, flush it later.

A prepare only adds its counts to a dictionary in this process (one lock, no I/O, no
database): its request never writes. A daemon thread per process (started by the first prepare
recorded in that process, restarted after a fork) wakes every
``POWERCONTEXT_PREPARE_AUDIT_FLUSH_SECONDS``, swaps the buffer out and hands it to
``prepare_aggregates_add`` on its own database connection — outside any request and
transaction, in the embedded default (eager Celery) as in service mode; a Celery task would run
inline on the request in the embedded default, hence a thread.

Loss semantics: what is buffered and not yet flushed is lost if the process dies (at most one
flush interval of prepares); a normal exit flushes once more. A failed flush puts its counts
back for the next one. The buffer holds at most ``POWERCONTEXT_PREPARE_AUDIT_MAX_BUCKETS``
buckets (scope x hour x mode); prepares of further buckets are dropped and only their number is
logged. Recorded: scope, UTC hour, search mode and counts, sizes and latency — never the query,
a text, an entry id or a citation.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from powercontext.core.background import PerProcess, Runner
from powercontext.prepare.explain import Summary
from powercontext.prepare.models import PREPARE_AGGREGATE_COUNTERS, PREPARE_LATENCY_BOUNDS_MS
from powercontext.prepare.stats import AggregateDelta, prepare_aggregates_add

logger = logging.getLogger("powercontext.prepare")

Key = tuple[str, datetime, str]
_WIDTH = len(PREPARE_AGGREGATE_COUNTERS)


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def counts_of(summary: Summary, latency_seconds: float) -> list[int]:
    """One prepare as a row of counters (``PREPARE_AGGREGATE_COUNTERS`` order)."""
    latency_ms = latency_seconds * 1000
    histogram = [0] * (len(PREPARE_LATENCY_BOUNDS_MS) + 1)
    histogram[next((i for i, b in enumerate(PREPARE_LATENCY_BOUNDS_MS) if latency_ms <= b), -1)] = 1
    counts = [
        1,
        int(summary.empty),
        summary.memory_candidates,
        summary.experience_candidates,
        summary.memory_admitted,
        summary.experience_admitted,
        summary.duplicates,
        *summary.skipped,
        *summary.truncated,
        summary.content_bytes,
        summary.max_bytes,
        round(latency_seconds * 1_000_000),
        *histogram,
    ]
    assert len(counts) == _WIDTH
    return counts


class PrepareAudit:
    """The buffer of one process: bucket key -> summed counters, behind one lock."""

    def __init__(self, max_buckets: int) -> None:
        self.max_buckets = max_buckets
        self._lock = threading.Lock()
        self._buckets: dict[Key, list[int]] = {}
        self._dropped = 0

    def record(self, *, scope_id: str, search_mode: str, counts: list[int], now: datetime) -> None:
        key = (scope_id, hour_of(now), search_mode)
        with self._lock:
            self._add(key, counts)

    def _add(self, key: Key, counts: list[int]) -> None:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_buckets:
                self._dropped += counts[0]
                return
            self._buckets[key] = list(counts)
            return
        for index, value in enumerate(counts):
            bucket[index] += value

    def pending(self) -> int:
        """Prepares buffered and not yet flushed."""
        with self._lock:
            return sum(bucket[0] for bucket in self._buckets.values())

    def clear(self) -> None:
        with self._lock:
            self._buckets, self._dropped = {}, 0

    def flush(self) -> int:
        """Write the buffered buckets (one transaction); returns how many were written.

        On failure the counts go back into the buffer (still capped) and the error propagates.
        """
        with self._lock:
            taken, self._buckets = self._buckets, {}
            dropped, self._dropped = self._dropped, 0
        if dropped:
            logger.warning("prepare_audit buffer_full dropped_prepares=%d", dropped)
        if not taken:
            return 0
        deltas = [AggregateDelta(k[0], k[1], k[2], tuple(v)) for k, v in taken.items()]
        try:
            return prepare_aggregates_add(deltas=deltas, now=timezone.now())
        except BaseException:
            with self._lock:
                for key, counts in taken.items():
                    self._add(key, counts)
            raise


class Flusher(Runner):
    """Flushes ``audit`` every ``interval`` seconds and once more when stopped."""

    name = "prepare-audit-flusher"
    logger = logger
    failure = "prepare_audit flush_failed"

    def __init__(self, audit: PrepareAudit, interval: float) -> None:
        super().__init__()
        self.audit = audit
        self.interval = interval

    def step(self) -> bool:
        self.flush_once()
        return False

    def on_stop(self) -> None:
        self.flush_once()

    def flush_once(self) -> None:
        """Flush; a failure is logged (its class only) and the counts wait for the next tick.
        (The thread closes its connections when it goes idle, right after.)"""
        try:
            self.audit.flush()
        except Exception as exc:
            logger.warning("prepare_audit flush_failed error_class=%s", type(exc).__name__)


_state_lock = threading.Lock()
_audit: PrepareAudit | None = None
_flushers: PerProcess[Flusher] = PerProcess()
_pid = os.getpid()


def buffer() -> PrepareAudit:
    """This process's buffer (a fresh, empty one in a forked child: the parent's is not ours)."""
    global _audit, _pid
    with _state_lock:
        if _audit is None or _pid != os.getpid():
            _audit = PrepareAudit(settings.POWERCONTEXT_PREPARE_AUDIT_MAX_BUCKETS)
            _pid = os.getpid()
        return _audit


def _ensure_flusher(audit: PrepareAudit) -> None:
    interval = settings.POWERCONTEXT_PREPARE_AUDIT_FLUSH_SECONDS
    if interval > 0:
        _flushers.get(lambda: Flusher(audit, interval))


def stop_flusher(timeout: float | None = 10) -> None:
    """Stop this process's flusher after one last flush (at exit; tests)."""
    _flushers.stop(timeout)


def record(*, scope_id: str, search_mode: str, summary: Summary, latency_seconds: float) -> None:
    """Buffer one prepare's metadata (no I/O). A no-op when the audit is off."""
    if not settings.POWERCONTEXT_PREPARE_AUDIT:
        return
    audit = buffer()
    audit.record(
        scope_id=scope_id,
        search_mode=search_mode,
        counts=counts_of(summary, latency_seconds),
        now=timezone.now(),
    )
    _ensure_flusher(audit)
