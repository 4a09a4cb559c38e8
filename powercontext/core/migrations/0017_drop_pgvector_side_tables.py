"""PostgreSQL: drop what the removed pgvector search path created outside migrations.

That path (docs/decisions.md) mirrored the vector tables into two side tables, kept in step by
statement triggers on the vector tables and their trigger functions, all created by
``rebuild_search_index`` or a ``post_migrate`` hook where the operator's database had the
``vector`` extension. Each is dropped if it exists (their indexes go with the tables): triggers
first, then the functions they call, then the tables. The extension itself is the operator's
and is left installed. SQLite never had any of them; reversing drops nothing back in (the
objects were never part of the migration history).
"""

from django.db import migrations

# (side table, the vector table its triggers were on)
MIRRORS = (
    ("powercontext_pgvector_memory", "powercontext_memoryentryvector"),
    ("powercontext_pgvector_experience", "powercontext_experiencevector"),
)


def statements() -> list[str]:
    drops = []
    for mirror, source in MIRRORS:
        drops += [
            f"DROP TRIGGER IF EXISTS {mirror}_gone ON {source}",
            f"DROP TRIGGER IF EXISTS {mirror}_truncated ON {source}",
        ]
    for mirror, _ in MIRRORS:
        drops.append(f"DROP FUNCTION IF EXISTS {mirror}_gone(), {mirror}_truncated()")
    drops.append(f"DROP TABLE IF EXISTS {', '.join(mirror for mirror, _ in MIRRORS)}")
    return drops


def drop_side_tables(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in statements():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("powercontext", "0016_prepare_aggregate_moves_to_its_app")]

    operations = [migrations.RunPython(drop_side_tables, migrations.RunPython.noop)]
