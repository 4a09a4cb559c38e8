from typing import Any

from celery import signals
from django.apps import AppConfig


def _warm_up_embeddings(**kwargs: Any) -> None:
    """Each Celery worker process loads the embedding model when it starts, not on its first task
    (gunicorn workers: gunicorn.conf.py; runserver: powercontext/wsgi.py)."""
    from powercontext.search.vectors import embedding

    embedding.warm_up()


class SearchConfig(AppConfig):
    name = "powercontext.search"
    label = "search"
    verbose_name = "Search"

    def ready(self) -> None:
        signals.worker_process_init.connect(_warm_up_embeddings, dispatch_uid="powercontext-search-warm-up")
