"""Embedding after commit: the Memory vector index as an asynchronously maintained derived index.

With ``POWERCONTEXT_EMBED_WRITES=async`` (the default) a writer inserts no vector: after its
transaction commits it signals the embedder for its scope (``powercontext.search.maintenance``),
and the embedder computes what is missing outside any transaction (``vector_index.store_vectors``). What still needs a vector is never
kept in memory or in a message: it is the database itself — entry versions active in their
scope's head without a vector row (``vector_index.missing_vectors``). A lost signal, a crashed
process or a model that was down therefore only delay vectors: the next signal for the scope,
the next process start (embedded default), the beat sweep (service mode) or
``rebuild_search_index`` fills the gap.

Who embeds:

- service mode (a Celery broker): the task ``powercontext.embed_pending`` per scope
  (``powercontext.search.tasks``), published
  at once, without countdown, through ``powercontext.core.broker.publish`` (bounded, never
  retried: a broker outage costs the write nothing). Signals of one process are coalesced: at
  most one task per scope per ``POWERCONTEXT_EMBED_COALESCE_SECONDS``. A task embeds a bounded
  number of batches and enqueues itself again while work remains. A write whose signal was
  coalesced into a task that had already read the gap, or whose publish failed, waits for the
  next signal of its scope or for the beat task ``powercontext.embed_pending_sweep``, which
  enqueues every scope with a gap (``POWERCONTEXT_EMBED_SWEEP_SECONDS``). No countdown: a
  worker holding countdown messages does not survive a broker restart (celery/kombu 5.7.0,
  docs/operations.md).
- embedded default (eager Celery: a task would run on the request): one daemon thread per
  process, started by the first signal (and again after a fork), that first queues every scope
  with a gap, then serves signals, a set of scopes (many writes to one scope: one entry), one
  batch per scope in turn. It runs on its own database connection, never inside a request's
  transaction; a failure is logged by its exception class only (never a text or an id) and the
  thread carries on.

Search meanwhile: ``vector``/``hybrid`` do not see entries without a vector yet; full text sees
every entry at once.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from powercontext.core.background import PerProcess, Runner
from powercontext.search.vectors import embedding
from powercontext.search.vectors.vector_index import (
    drop_other_model_vectors,
    missing_vectors,
    scopes_missing_vectors,
    store_vectors,
)

logger = logging.getLogger("powercontext.search")

BATCH = 64  # entry versions embedded per write transaction (~1 s of model time at most)
TASK_BATCHES = 16  # batches one Celery task runs before it enqueues itself again
# While writers of this process keep signalling (a burst), the embedder waits for a pause of
# QUIET_SECONDS without a signal; it waits at most BURST_WAIT_SECONDS, then embeds for
# BURST_SLICE_SECONDS before it waits again: it takes at most ~10 % of the time during a burst,
# so its lag stays bounded, and embeds at full speed once the writers pause.
QUIET_SECONDS = 0.025
BURST_WAIT_SECONDS = 0.9
BURST_SLICE_SECONDS = 0.1


def is_async() -> bool:
    return bool(settings.POWERCONTEXT_EMBED_WRITES == "async")


@dataclass(frozen=True)
class EmbedRun:
    written: int
    remaining: bool  # whether the scope still had a gap when the run stopped


def embed_pending(
    scope_id: str,
    *,
    until_done: bool = False,
    max_batches: int = 1,
    before_each: Callable[[], None] | None = None,
) -> EmbedRun:
    """Embed what the scope is missing: ``max_batches`` batches, or all of it (``until_done``).

    Each batch is embedded outside any transaction and written in one transaction for the
    versions still active and still without a vector, so concurrent runs (two processes) and
    writes in between are harmless. Nothing happens when the model is unavailable.
    """
    model = embedding.embedder()
    if model is None:
        return EmbedRun(0, remaining=False)
    written, batches, previous = 0, 0, None
    while until_done or batches < max_batches:
        batch = missing_vectors(scope_id, BATCH)
        if not batch:
            return EmbedRun(written, remaining=False)
        stored = store_vectors(model, batch, before_each)
        if stored == 0 and batch == previous:
            break  # the same rows again and nothing stored: give up for now, report the gap
        written, batches, previous = written + stored, batches + 1, batch
    return EmbedRun(written, remaining=bool(missing_vectors(scope_id, 1)))


def replace_other_model_vectors() -> int:
    """When this process runs the primary model (``embedding.MODEL_ID``), delete the vectors an
    earlier model computed so that the embedder computes them again (after an upgrade that
    changed the model; ``rebuild_search_index`` does the same). Once per embedder start (the
    thread here, the first sweep of a Celery worker process). A process on the fallback model
    deletes nothing. Returns the rows deleted (logged as a count)."""
    model = embedding.embedder()
    if model is None or model.model_id != embedding.MODEL_ID:
        return 0
    dropped = drop_other_model_vectors(model.model_id)
    if dropped:
        logger.info("embedder: %d vectors of an earlier model dropped, embedding them again", dropped)
    return dropped


# -- the embedded default's thread -----------------------------------------------------------------


class EmbedWorker(Runner):
    """Embeds signalled scopes one batch at a time, round robin; see the module docstring."""

    name = "powercontext-embedder"
    logger = logger
    failure = "embedder failed"

    def __init__(self) -> None:
        super().__init__()
        self._queue = threading.Condition()
        self._queued: dict[str, None] = {}  # an ordered set
        self._busy: str | None = None
        self._last_signal = float("-inf")
        self._slice_until = float("-inf")

    def submit(self, scope_id: str) -> None:
        with self._queue:
            self._queued[scope_id] = None
            self._last_signal = time.monotonic()
        self.wake()

    def wait_idle(self, scope_id: str, timeout: float) -> bool:
        """Wait until the scope is neither queued nor being embedded; False on timeout."""
        deadline = time.monotonic() + timeout
        if not self.started.wait(timeout):
            return False
        timeout = max(0.0, deadline - time.monotonic())
        with self._queue:
            return self._queue.wait_for(
                lambda: scope_id not in self._queued and self._busy != scope_id, timeout
            )

    def on_start(self) -> None:
        # After a model change, vectors of the old model are gaps too.
        replace_other_model_vectors()
        # A process that died left gaps nobody signals again: fill them at the next start.
        for scope_id in scopes_missing_vectors():
            self.submit(scope_id)

    def step(self) -> bool:
        """One batch of the next queued scope; the scope goes to the back while it has a gap."""
        with self._queue:
            if not self._queued:
                return False
            scope_id = next(iter(self._queued))
            del self._queued[scope_id]
            self._busy = scope_id
        run: EmbedRun | None = None
        try:
            run = self.guarded(functools.partial(embed_pending, scope_id, before_each=self._yield_to_writers))
        finally:
            with self._queue:
                self._busy = None
                if run is not None and run.remaining:
                    self._queued.setdefault(scope_id, None)  # behind the other scopes
                self._queue.notify_all()
                more = bool(self._queued)
        return more

    def _yield_to_writers(self) -> None:
        # Before each model run. Writers first: while they keep signalling, wait for them to
        # pause (or for the burst wait to run out, then take one slice). A lower thread
        # priority was tried instead: a descheduled embedder holding the GIL then stalled the
        # writers (docs/retrieval.md); a pause of 25 ms before each run still took ~half the
        # time of a burst (remember throughput 0.56-0.78x of the model off on busy cores).
        now = time.monotonic()
        if now < self._slice_until or now - self._last_signal >= QUIET_SECONDS:
            return
        deadline = now + BURST_WAIT_SECONDS
        while not self.halting():
            now = time.monotonic()
            quiet_at = self._last_signal + QUIET_SECONDS
            if now >= quiet_at:
                return
            if now >= deadline:
                self._slice_until = now + BURST_SLICE_SECONDS
                return
            self.pause(min(quiet_at, deadline) - now)


_workers: PerProcess[EmbedWorker] = PerProcess()


def worker() -> EmbedWorker:
    """This process's embedder thread, started on first use (and anew in a forked child)."""
    return _workers.get(EmbedWorker)


def stop_worker(timeout: float | None = 10) -> None:
    """Stop this process's embedder thread (at exit; tests). Gaps stay in the database."""
    _workers.stop(timeout)


def wait_until_embedded(scope_id: str, timeout: float) -> bool:
    """Wait until every active entry of the scope has a vector; False on timeout or when the
    model is unavailable. In the embedded default it drives and waits on this process's thread;
    in service mode it polls the database (the workers embed)."""
    if embedding.embedder() is None:
        return False
    deadline = time.monotonic() + timeout
    while missing_vectors(scope_id, 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if settings.CELERY_TASK_ALWAYS_EAGER:
            current = worker()
            current.submit(scope_id)
            current.wait_idle(scope_id, remaining)
        else:
            threading.Event().wait(min(0.1, remaining))
    return True
