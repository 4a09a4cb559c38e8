"""Search rows keep their document length (number of index tokens) for BM25 on PostgreSQL.

The column is added in place (``ALTER TABLE ... ADD COLUMN``): on SQLite, Django would rebuild
the table instead, dropping the triggers that keep the FTS5 table in step.

Existing rows are filled from what they already store: on SQLite the space-separated tokens are
counted; on PostgreSQL the positions of the ``tsvector`` are summed, which is exact unless a term
repeats more than 255 times in one document (``rebuild_search_index --verify-only`` reports such
rows as mismatched and ``rebuild_search_index`` corrects them).
"""

from django.db import migrations, models

TABLES = ("powercontext_memorysearchdocument", "powercontext_experiencesearchdocument")


def _add(apps, schema_editor):
    for table in TABLES:
        schema_editor.execute(
            f'ALTER TABLE {table} ADD COLUMN "length" integer NOT NULL DEFAULT 0 CHECK ("length" >= 0)'
        )
    _fill(schema_editor)


def _drop(apps, schema_editor):
    for table in TABLES:
        schema_editor.execute(f'ALTER TABLE {table} DROP COLUMN "length"')


def _fill(schema_editor):
    # Table names are the constants above; nothing else is interpolated.
    vendor = schema_editor.connection.vendor
    for table in TABLES:
        if vendor == "postgresql":
            count = "(SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(document) u)"
        else:
            count = (
                "CASE WHEN trim(terms) = '' THEN 0"
                " ELSE length(trim(terms)) - length(replace(trim(terms), ' ', '')) + 1 END"
            )
        schema_editor.execute(f"UPDATE {table} SET length = {count}")  # noqa: S608


class Migration(migrations.Migration):
    dependencies = [("powercontext", "0012_prepare_aggregate")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="memorysearchdocument",
                    name="length",
                    field=models.PositiveIntegerField(default=0),
                ),
                migrations.AddField(
                    model_name="experiencesearchdocument",
                    name="length",
                    field=models.PositiveIntegerField(default=0),
                ),
            ],
            database_operations=[migrations.RunPython(_add, _drop)],
        )
    ]
