"""The Celery app. Without CELERY_BROKER_URL tasks run eagerly in-process (embedded default)."""

import os
from pathlib import Path
from typing import Any

from celery import Celery
from celery.beat import PersistentScheduler
from celery.signals import worker_process_init
from django.db import OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "powercontext.settings")

app = Celery("powercontext")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Every task is idempotent work: redelivered after a worker crash, retried with backoff while the
# database is down.
TASK_OPTIONS: dict[str, Any] = {
    "acks_late": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": True,
    "max_retries": 3,
}


class DataDirScheduler(PersistentScheduler):  # type: ignore[misc]
    """Beat's default scheduler, creating the directory of its schedule file first: the file lives
    in POWERCONTEXT_DATA_DIR (settings.CELERY_BEAT_SCHEDULE_FILENAME), which service mode may not
    have created."""

    def setup_schedule(self) -> None:
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()


@worker_process_init.connect
def _warm_up_embeddings(**kwargs: Any) -> None:
    """Each worker process loads the embedding model when it starts, not on its first task."""
    from powercontext.search import embedding

    embedding.warm_up()
