"""A real Celery worker and a real beat, through Redis, run the pipeline with no manual call."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery

from powercontext.memory.selectors import memory_list_entries
from tests.pipeline.helpers import capture
from tests.powercontext.test_celery_integration import ROOT, _database_url

SCOPE = "celery-pipeline"


def _start(args: list[str], env: dict[str, str], log: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "powercontext", *args],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


@pytest.fixture
def worker_and_beat(tmp_path: Path) -> Iterator[Celery]:
    broker = os.environ["POWERCONTEXT_TEST_REDIS_URL"]
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": broker,
        "LOG_LEVEL": "WARNING",
        # As in-process tests (tests/conftest.py): the embedding model only where asked for.
        "POWERCONTEXT_EMBEDDINGS": "false",
        # A scan every second, sessions eligible at once, Phase 2 without cooldown.
        "POWERCONTEXT_PIPELINE_SCAN_SECONDS": "1",
        "POWERCONTEXT_PIPELINE_IDLE_SECONDS": "0",
        "POWERCONTEXT_PIPELINE_COOLDOWN_SECONDS": "0",
    }
    worker_log = (tmp_path / "worker.log").open("w")
    beat_log = (tmp_path / "beat.log").open("w")
    worker = _start(
        [
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--loglevel=WARNING",
            "-E",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        env,
        worker_log,
    )
    beat = _start(
        ["beat", "--loglevel=WARNING", "--max-interval=1", f"--schedule={tmp_path / 'beat-schedule'}"],
        env,
        beat_log,
    )
    client = Celery("powercontext-test", broker=broker, backend=broker)
    client.conf.accept_content = ["json"]
    try:
        yield client
    finally:
        for process in (beat, worker):
            process.terminate()
        for process in (beat, worker):
            process.wait(timeout=30)
        worker_log.close()
        beat_log.close()


def remembered() -> list[str]:
    return sorted(entry.text for entry in memory_list_entries(scope_id=SCOPE)[1])


def wait_for_task_events(app: Celery, done: Any, timeout: float = 120) -> None:
    """Block on the worker's task events (no sleeping) until ``done()`` holds after one of them."""
    with app.connection_for_read() as connection:
        receiver: Any = None

        def on_event(event: dict[str, Any]) -> None:
            if event.get("type") == "task-succeeded" and done():
                receiver.should_stop = True

        receiver = app.events.Receiver(connection, handlers={"*": on_event})
        receiver.capture(limit=None, timeout=timeout, wakeup=False)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_beat_and_a_worker_turn_a_captured_session_into_memory(worker_and_beat: Celery) -> None:
    capture(SCOPE, "p1", "remember: the worker found this on its own\nnote: via beat", session="celery-1")

    wait_for_task_events(worker_and_beat, lambda: len(remembered()) == 2)

    assert remembered() == ["the worker found this on its own", "via beat"]
