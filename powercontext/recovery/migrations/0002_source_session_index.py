"""Indexes on the captured sources by (scope, source type, ``metadata.session_id``, position), so a session's
history is found and paged without scanning its scope, and by (scope, session,
``metadata.window_id``, position), so the hint's "windows seen" is read from the index. Built on
exactly the expressions ``powercontext.recovery.history.metadata_key`` queries with, per vendor."""

from __future__ import annotations

from typing import Any

from django.db import migrations

KEY = {"sqlite": "json_extract(metadata, '$.{}')", "postgresql": "(metadata ->> '{}')"}
INDEXES = {
    "recovery_source_session": ("session_id",),
    "recovery_source_session_window": ("session_id", "window_id"),
}


def create(apps: Any, schema_editor: Any) -> None:
    key = KEY.get(schema_editor.connection.vendor)
    if key is None:
        return
    for name, keys in INDEXES.items():
        columns = ", ".join(["scope_id", "source_type", *(key.format(k) for k in keys), "position"])
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON powercontext_source ({columns})")


def drop(apps: Any, schema_editor: Any) -> None:
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("recovery", "0001_initial"),
        ("powercontext", "0017_drop_pgvector_side_tables"),
    ]

    operations = [migrations.RunPython(create, drop)]
