"""The prepare aggregates now belong to the ``prepare`` app (its 0001 takes them over with the
same table): state only, no data moves."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0015_pipeline_moves_to_its_app"),
        ("prepare", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name="PrepareAggregate",
                ),
            ],
            database_operations=[],
        ),
    ]
