"""An index on the captured sources by (scope, ``metadata.session_id``, position), so a session's
history is found without scanning its scope. Built on exactly the expression
``powercontext.recovery.history.metadata_key("session_id")`` queries with, per vendor."""

from __future__ import annotations

from typing import Any

from django.db import migrations

INDEX = "recovery_source_session"
CREATE = {
    "sqlite": (
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON powercontext_source "
        "(scope_id, json_extract(metadata, '$.session_id'), position)"
    ),
    "postgresql": (
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON powercontext_source "
        "(scope_id, (metadata ->> 'session_id'), position)"
    ),
}


def create(apps: Any, schema_editor: Any) -> None:
    sql = CREATE.get(schema_editor.connection.vendor)
    if sql is not None:
        schema_editor.execute(sql)


def drop(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("recovery", "0001_initial"),
        ("powercontext", "0017_drop_pgvector_side_tables"),
    ]

    operations = [migrations.RunPython(create, drop)]
