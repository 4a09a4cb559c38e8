"""Moving a model from this app to another without touching its table.

The model keeps its table (``db_table``), so a move is two state-only migrations: this app
forgets the model and the new app learns it. Its content types are relabelled, not recreated, so
every permission granted on the model (and so every group that holds one) follows it.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations


def relabel_content_types(models: tuple[str, ...], old: str, new: str) -> migrations.RunPython:
    """A reversible operation that moves the content types of ``models`` from app ``old`` to ``new``."""

    def relabel(source: str, target: str) -> Any:
        def run(apps: Any, schema_editor: Any) -> None:
            content_type = apps.get_model("contenttypes", "ContentType")
            rows = content_type.objects.using(schema_editor.connection.alias)
            for model in models:
                if not rows.filter(app_label=target, model=model).exists():
                    rows.filter(app_label=source, model=model).update(app_label=target)

        return run

    return migrations.RunPython(relabel(old, new), relabel(new, old))
