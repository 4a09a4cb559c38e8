"""The pipeline's five tables now belong to the ``pipeline`` app. Their rows stay where they are:
this only removes them from this app's model state (``pipeline`` 0001 adds them to its own, with
the same table names), so no data moves and nothing is dropped."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0014_experience_vector"),
        ("pipeline", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name="PipelineCounter",
                ),
                migrations.DeleteModel(
                    name="PipelineJob",
                ),
                migrations.DeleteModel(
                    name="PipelineOutput",
                ),
                migrations.DeleteModel(
                    name="PipelineScopeJob",
                ),
                migrations.DeleteModel(
                    name="PipelineSelection",
                ),
            ],
            database_operations=[],
        ),
    ]
