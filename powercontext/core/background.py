"""One background thread per process for a job, with the lifecycle every such job needs.

Two jobs run this way, outside any request and transaction, in the embedded default (eager
Celery: a task would run inline on the request) as in service mode where the job has no task:
the after-commit embedder (``powercontext.search.vectors.pending.EmbedWorker``) and the prepare-audit
flusher (``powercontext.prepare.audit.Flusher``).

A job subclasses ``Runner`` and implements ``step`` (one unit of work; True while more is
waiting), optionally ``on_start`` and ``on_stop`` (run on the thread, before the first step and
after the last). The runner:

- runs a step when woken (``wake``: work was submitted), every ``interval`` seconds when the job
  has one, and again at once while ``step`` says more is waiting;
- closes the thread's database connections whenever it goes idle and after a failure, so a
  broken connection never poisons the next step and an idle thread holds none;
- logs a failed step by its exception class only (never a text or an id) and carries on: the
  next wake or interval runs a step again (no retry loop on a persistent failure);
- stops on ``stop`` (joins; ``on_stop`` runs first on the thread), and ``pause`` returns early
  then, so a job's own waits never hold up a stop.

``PerProcess`` holds a job's one runner per process: started on first use, started anew in a
forked child (threads do not survive ``fork``) or when its thread died, stopped at exit (before
the interpreter's thread pools stop taking work: ``_at_interpreter_exit``).
"""

from __future__ import annotations

import atexit
import concurrent.futures.thread  # noqa: F401 -- its exit hook must be registered before ours
import logging
import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from django.db import connections

_T = TypeVar("_T")


class Runner:
    """A daemon thread running one job's steps; see the module docstring."""

    name = "powercontext-runner"
    interval: float | None = None  # run a step this often even when not woken (None: only woken)
    logger = logging.getLogger("powercontext")
    failure = "background step failed"  # the log event of a failed step

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.started = threading.Event()  # set once ``on_start`` has run
        self._condition = threading.Condition()
        self._woken = False
        self._stopping = False
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    # -- the job's part ---------------------------------------------------------------------------

    def on_start(self) -> None:
        """Run once on the thread before the first step."""

    def step(self) -> bool:
        """One unit of work; True while more is waiting (the next step runs at once)."""
        raise NotImplementedError

    def on_stop(self) -> None:
        """Run once on the thread after the last step, when stopped."""

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def wake(self) -> None:
        """Run a step soon (work was submitted)."""
        with self._condition:
            self._woken = True
            self._condition.notify_all()

    def pause(self, seconds: float) -> None:
        """Wait on the thread for up to ``seconds``; returns at once when stopping."""
        self._halt.wait(seconds)

    def halting(self) -> bool:
        """Whether ``stop`` has been called."""
        return self._halt.is_set()

    def stop(self, timeout: float | None = None) -> None:
        self._halt.set()
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def guarded(self, work: Callable[[], _T]) -> _T | None:
        """Run ``work``; on failure log its class only, close this thread's connections and
        return None."""
        try:
            return work()
        except Exception as exc:
            self.logger.warning("%s error_class=%s", self.failure, type(exc).__name__)
            connections.close_all()
            return None

    def _idle(self) -> bool:
        """Wait until woken, the interval passes or a stop; False when stopping."""
        with self._condition:
            waiting = not (self._woken or self._stopping)
        if waiting:
            connections.close_all()  # idle: this thread's connections only
        with self._condition:
            self._condition.wait_for(lambda: self._woken or self._stopping, self.interval)
            self._woken = False
            return not self._stopping

    def _run(self) -> None:
        try:
            self.guarded(self.on_start)
            self.started.set()
            while self._idle():
                while self.guarded(self.step) and not self._stopping:
                    pass
            self.guarded(self.on_stop)
        finally:
            self.started.set()
            connections.close_all()


_R = TypeVar("_R", bound=Runner)


def _at_interpreter_exit(stop: Callable[[], None]) -> None:
    """Run ``stop`` as the interpreter begins to exit, before ``concurrent.futures``' thread pools
    stop taking work (the embedder's model runs go through one): their hook is registered at
    import, above, and such hooks run newest first. Registered with ``atexit`` instead, a runner
    still busy at exit (an embedder with a backlog when the server stops) would have its step
    refused by the pool and log it as a failure."""
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(stop)
            return
    except RuntimeError:  # the interpreter is already shutting down
        pass
    atexit.register(stop)


class PerProcess(Generic[_R]):
    """This process's one runner of a job: see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: _R | None = None
        self._atexit_registered = False

    def get(self, make: Callable[[], _R]) -> _R:
        """The running runner, or a new one from ``make``, started (first use, after a fork,
        or after its thread died)."""
        with self._lock:
            current = self._current
            if current is None or current.pid != os.getpid() or not current.is_alive():
                current = self._current = make()
                current.start()
                if not self._atexit_registered:
                    _at_interpreter_exit(self.stop)
                    self._atexit_registered = True
            return current

    def stop(self, timeout: float | None = 10) -> None:
        """Stop this process's runner (at exit; tests); a parent's runner is left alone."""
        with self._lock:
            current, self._current = self._current, None
        if current is not None and current.pid == os.getpid():
            current.stop(timeout)
