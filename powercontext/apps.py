from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.db.models.signals import post_migrate


def _set_up_pgvector(sender: AppConfig, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """After ``migrate``: when pgvector is asked for (``POWERCONTEXT_VECTOR_SEARCH=pgvector``) and
    the database has it, create (and fill) the vector search side tables if they are missing
    (``powercontext.search.vector_pgvector``; idempotent)."""
    if using != DEFAULT_DB_ALIAS or settings.POWERCONTEXT_VECTOR_SEARCH != "pgvector":
        return
    from powercontext.search import vector_backend
    from powercontext.search.rebuild import rebuild_pgvector_mirror

    vector_backend.forget_detection()
    if (
        vector_backend.vector_backend().pgvector is not None
        and not vector_backend.vector_backend().pgvector_set_up
    ):
        rebuild_pgvector_mirror()


class PowerContextConfig(AppConfig):
    name = "powercontext"
    verbose_name = "PowerContext core"

    def ready(self) -> None:
        post_migrate.connect(_set_up_pgvector, sender=self, dispatch_uid="powercontext-pgvector-setup")
