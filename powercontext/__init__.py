"""PowerContext: project package and core domain."""

from powercontext.celery import app as celery_app

__all__ = ["celery_app"]
