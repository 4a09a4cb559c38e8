"""The Celery app. Without CELERY_BROKER_URL tasks run eagerly in-process (embedded default)."""

import os
from pathlib import Path
from typing import Any

from celery import Celery, signals
from celery.beat import PersistentScheduler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "powercontext.settings")

app = Celery("powercontext")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Every task is idempotent work, redelivered after a worker crash. No retries with backoff: a
# retry is a countdown message that the worker holds unacknowledged until it is due, and with
# celery/kombu 5.7.0 a broker restart while a worker holds one ends the worker. The database is
# the queue of record: a task that failed (the database was down) is found again by the beat
# sweeps (pipeline scan, embed sweep); rebuilds and verifies are rerun by the operator.
TASK_OPTIONS: dict[str, Any] = {"acks_late": True}


class DataDirScheduler(PersistentScheduler):  # type: ignore[misc]
    """Beat's default scheduler, creating the directory of its schedule file first: the file lives
    in POWERCONTEXT_DATA_DIR (settings.CELERY_BEAT_SCHEDULE_FILENAME), which service mode may not
    have created."""

    def setup_schedule(self) -> None:
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()


@signals.worker_ready.connect
def _start_heartbeat(sender: Any = None, **kwargs: Any) -> None:
    # Every worker writes a heartbeat row (powercontext.core.heartbeat), so a dead worker shows
    # in the health detail view and /metrics within two periods.
    from powercontext.core import heartbeat

    heartbeat.start_worker_heartbeat(getattr(sender, "hostname", None) or "worker")


@signals.worker_shutdown.connect
def _stop_heartbeat(sender: Any = None, **kwargs: Any) -> None:
    from powercontext.core import heartbeat

    heartbeat.stop_worker_heartbeat()
