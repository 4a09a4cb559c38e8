"""Celery settings that keep the web tier off the broker's back and workers alive through broker
restarts (docs/operations.md "Broker restarts")."""

from __future__ import annotations

from pathlib import Path

from powercontext.celery import TASK_OPTIONS, app
from tests.hardening.processes import child_env, run_python

CONF = (
    "import django; django.setup(); from powercontext.celery import app; c = app.conf; "
    "print(c.result_backend, c.task_ignore_result, c.broker_connection_max_retries, "
    "sorted(q.name for q in c.task_queues), "
    "sorted({e['options']['queue'] for e in c.beat_schedule.values()}))"
)


def test_service_mode_has_no_result_backend_and_reconnects_forever(tmp_path: Path) -> None:
    result = run_python(
        CONF, child_env(tmp_path, CELERY_BROKER_URL="redis://127.0.0.1:1/0", SECRET_KEY="k" * 50)
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "True", "None", "['celery',", "'periodic']", "['periodic']"]


def test_an_explicit_result_backend_stores_results_again(tmp_path: Path) -> None:
    env = child_env(
        tmp_path,
        CELERY_BROKER_URL="redis://127.0.0.1:1/0",
        CELERY_RESULT_BACKEND="redis://127.0.0.1:1/1",
        SECRET_KEY="k" * 50,
    )
    result = run_python(CONF, env)

    assert result.stdout.split()[:2] == ["redis://127.0.0.1:1/1", "False"]


def test_tasks_never_retry_with_a_countdown() -> None:
    # A retry is a countdown message the worker holds unacknowledged: the one thing that
    # killed workers on a broker restart (celery/kombu 5.7.0). The sweeps re-find failed work.
    assert "autoretry_for" not in TASK_OPTIONS and "retry_backoff" not in TASK_OPTIONS
    for name, task in app.tasks.items():
        if name.startswith("powercontext."):
            assert not getattr(task, "autoretry_for", ()), name
