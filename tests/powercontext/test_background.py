"""The per-process background runner behind the embedder and the prepare-audit flusher: steps
when woken, on its interval, and again while work waits; a failed step is logged by class and
the thread carries on; ``on_stop`` runs on stop; one runner per process, anew after a fork or
when its thread died."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from powercontext.core import background

WAIT = 10.0  # seconds: an upper bound for a thread to get there, never a timing assumption


class Job(background.Runner):
    name = "test-runner"

    def __init__(self, interval: float | None = None) -> None:
        super().__init__()
        self.interval = interval
        self.todo: list[str] = []
        self.done: list[str] = []
        self.threads: set[str] = set()
        self.steps = 0
        self.stopped = 0
        self.changed = threading.Condition()

    def add(self, *items: str) -> None:
        with self.changed:
            self.todo.extend(items)
        self.wake()

    def until(self, predicate: Any) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, WAIT)

    def step(self) -> bool:
        self.threads.add(threading.current_thread().name)
        with self.changed:
            self.steps += 1
            item = self.todo.pop(0) if self.todo else None
            if item is not None and item != "boom":
                self.done.append(item)
            self.changed.notify_all()
            more = bool(self.todo)
        if item == "boom":
            raise RuntimeError("secret text that must not be logged")
        return more

    def on_stop(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.stopped += 1


def test_a_woken_runner_steps_until_nothing_waits_and_stop_runs_on_stop_on_its_thread() -> None:
    job = Job()
    job.start()
    assert job.started.wait(WAIT)

    job.add("a", "b", "c")  # one wake, three steps
    assert job.until(lambda: job.done == ["a", "b", "c"])
    job.stop(WAIT)

    assert not job.is_alive() and job.stopped == 1 and job.threads == {"test-runner"}


def test_a_failed_step_is_logged_by_class_and_the_next_wake_runs_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    job = Job()
    job.start()
    with caplog.at_level(logging.WARNING, logger="powercontext"):
        job.add("boom")
        assert job.until(lambda: job.steps == 1)
        job.add("after")
        assert job.until(lambda: job.done == ["after"])
    job.stop(WAIT)

    assert "background step failed error_class=RuntimeError" in caplog.text
    assert "secret" not in caplog.text


def test_an_interval_runner_steps_without_being_woken() -> None:
    job = Job(interval=0.01)
    job.start()
    try:
        assert job.until(lambda: job.steps >= 2)  # never woken: the interval ran it
    finally:
        job.stop(WAIT)
    assert job.stopped == 1


def test_one_runner_per_process_started_anew_after_a_fork_or_when_its_thread_died(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    holder: background.PerProcess[Job] = background.PerProcess()
    first = holder.get(Job)
    assert holder.get(Job) is first and first.is_alive()

    first.stop(WAIT)  # its thread died (without the holder knowing)
    second = holder.get(Job)
    assert second is not first and second.is_alive()

    real_pid = second.pid
    monkeypatch.setattr(background.os, "getpid", lambda: real_pid + 1)  # as in a forked child
    child = holder.get(Job)
    assert child is not second and child.pid == real_pid + 1
    monkeypatch.undo()
    holder.stop(WAIT)  # the "child's" runner is not this process's: left alone
    assert child.is_alive()

    child.stop(WAIT)
    second.stop(WAIT)
    assert not child.is_alive() and not second.is_alive()


def test_stop_is_prompt_while_the_job_pauses() -> None:
    class Pausing(Job):
        def step(self) -> bool:
            with self.changed:
                self.steps += 1
                self.changed.notify_all()
            self.pause(3600)  # returns at once when stopped
            return False

    job = Pausing()
    job.start()
    job.add("x")
    assert job.until(lambda: job.steps == 1)
    job.stop(WAIT)
    assert not job.is_alive() and job.stopped == 1


_EXITING_WHILE_BUSY = """
import logging, sys, threading
from concurrent.futures import ThreadPoolExecutor
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
from powercontext.core import background

pool = ThreadPoolExecutor(max_workers=1)  # as the embedder's model runs go through a pool
ran = threading.Event()

class Busy(background.Runner):
    name = "test-busy"
    def step(self):
        pool.submit(ran.set).result()
        return True  # always more to do, like an embedder with a backlog

runner = background.PerProcess().get(Busy)
runner.wake()
ran.wait(10)
print("exiting", flush=True)
"""


def test_a_busy_runner_stops_before_thread_pools_refuse_work_at_exit() -> None:
    # A process that exits while its runner still has work (the embedder with a backlog, when
    # `make run` is stopped) stops the runner before the interpreter's thread pools refuse new
    # work, so a step is never cut short into a logged "failure".
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _EXITING_WHILE_BUSY], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting"
    assert "failed" not in done.stderr, done.stderr
