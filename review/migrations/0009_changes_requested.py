"""Request changes (issue 32): the candidate status ``changes_requested`` (a longer status
column), the review thread's actions and per-field comments on ``ReviewAction``."""

from typing import Any

from django.conf import settings
from django.db import migrations, models

# SQLite rebuilds the table to widen the status column, and the rebuild keeps only the indexes
# the model declares: the scope filter's vendor-specific prefix index (0004_queue_density) is
# made again afterwards. PostgreSQL changes the column in place and keeps it.
SQLITE_PREFIX_INDEX = "CREATE INDEX IF NOT EXISTS candidate_scope_prefix ON review_candidate (status, scope_id COLLATE NOCASE, id)"


def restore_prefix_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(SQLITE_PREFIX_INDEX)


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0020_service_heartbeat"),
        ("review", "0008_near_duplicate_terms"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="reviewaction",
            name="field_comments",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="candidate",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("approved", "Approved"),
                    ("rejected", "Rejected"),
                    ("changes_requested", "Changes Requested"),
                ],
                default="pending",
                max_length=24,
            ),
        ),
        migrations.RunPython(restore_prefix_index, restore_prefix_index),
        migrations.AlterField(
            model_name="reviewaction",
            name="action",
            field=models.CharField(
                choices=[
                    ("reopened", "Reopened"),
                    ("retired", "Retired"),
                    ("reverted", "Reverted"),
                    ("changes_requested", "Changes Requested"),
                    ("commented", "Commented"),
                    ("changes_withdrawn", "Changes Withdrawn"),
                ],
                max_length=24,
            ),
        ),
        migrations.AddIndex(
            model_name="reviewaction",
            index=models.Index(fields=["candidate", "acted_at"], name="review_action_thread"),
        ),
    ]
