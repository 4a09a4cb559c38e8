"""The Celery app. Without CELERY_BROKER_URL tasks run eagerly in-process (embedded default)."""

import os
from typing import Any

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "powercontext.settings")

app = Celery("powercontext")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _warm_up_embeddings(**kwargs: Any) -> None:
    """Each worker process loads the embedding model when it starts, not on its first task."""
    from powercontext.search import embedding

    embedding.warm_up()
