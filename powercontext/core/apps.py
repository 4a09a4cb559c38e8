from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.db.backends.signals import connection_created

from powercontext.core.private_files import private_sqlite_files, sqlite_file


class CoreConfig(AppConfig):
    name = "powercontext.core"
    label = "powercontext"
    verbose_name = "PowerContext core"

    def ready(self) -> None:
        from powercontext.core.checks import removed_settings

        checks.register(removed_settings, checks.Tags.compatibility)
        connection_created.connect(private_sqlite_connection, dispatch_uid="powercontext.private_sqlite")


def private_sqlite_connection(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Every new SQLite connection: its database file and companions 0600 (``private_files``)."""
    if connection.vendor == "sqlite":
        path = sqlite_file(connection.settings_dict.get("NAME"))
        if path is not None:
            private_sqlite_files(path, create=False)
