"""The pipeline's tables, moved here from the ``powercontext`` app (its migration 0009 created them).

The tables keep their names (``db_table``), so this migration only adds the models to this app's
state; the database is untouched. Content types (and so every permission granted on these models)
are relabelled rather than recreated."""

from django.db import migrations, models

from powercontext.core.migrations._moves import relabel_content_types

MOVED = ("pipelinejob", "pipelineoutput", "pipelinescopejob", "pipelineselection", "pipelinecounter")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("powercontext", "0014_experience_vector"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="PipelineScopeJob",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("scope_id", models.CharField(max_length=256, unique=True)),
                        (
                            "status",
                            models.CharField(
                                choices=[("idle", "Idle"), ("running", "Running"), ("failed", "Failed")],
                                default="idle",
                                max_length=16,
                            ),
                        ),
                        ("pending", models.BooleanField(default=True)),
                        ("ownership_token", models.CharField(blank=True, default="", max_length=64)),
                        ("worker_id", models.CharField(blank=True, default="", max_length=128)),
                        ("lease_until", models.DateTimeField(blank=True, null=True)),
                        ("heartbeat_at", models.DateTimeField(blank=True, null=True)),
                        ("cooldown_until", models.DateTimeField(blank=True, null=True)),
                        ("retry_count", models.PositiveIntegerField(default=0)),
                        ("error_code", models.CharField(blank=True, default="", max_length=64)),
                        ("selection_digest", models.CharField(blank=True, default="", max_length=64)),
                        ("last_success_at", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name": "pipeline phase 2 job",
                        "db_table": "powercontext_pipelinescopejob",
                    },
                ),
                migrations.CreateModel(
                    name="PipelineCounter",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("scope_id", models.CharField(max_length=256)),
                        (
                            "name",
                            models.CharField(
                                choices=[
                                    ("claimed", "Claimed"),
                                    ("output", "Output"),
                                    ("no_output_first", "No Output First"),
                                    ("no_output_deleting", "No Output Deleting"),
                                    ("schema_invalid", "Schema Invalid"),
                                    ("failed", "Failed"),
                                    ("exhausted", "Exhausted"),
                                    ("forgotten", "Forgotten"),
                                    ("proposed", "Proposed"),
                                    ("duplicate_skipped", "Duplicate Skipped"),
                                ],
                                max_length=32,
                            ),
                        ),
                        ("value", models.BigIntegerField(default=0)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name": "pipeline counter",
                        "db_table": "powercontext_pipelinecounter",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("scope_id", "name"), name="pipeline_counter_unique"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="PipelineJob",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("scope_id", models.CharField(max_length=256)),
                        ("session_id", models.CharField(max_length=300)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("running", "Running"),
                                    ("done", "Done"),
                                    ("failed", "Failed"),
                                    ("exhausted", "Exhausted"),
                                ],
                                max_length=16,
                            ),
                        ),
                        ("ownership_token", models.CharField(blank=True, default="", max_length=64)),
                        ("worker_id", models.CharField(blank=True, default="", max_length=128)),
                        ("lease_until", models.DateTimeField(blank=True, null=True)),
                        ("input_watermark", models.BigIntegerField(default=0)),
                        ("last_success_watermark", models.BigIntegerField(default=0)),
                        ("retry_budget", models.PositiveSmallIntegerField(default=3)),
                        ("retries_left", models.PositiveSmallIntegerField(default=3)),
                        ("backoff_until", models.DateTimeField(blank=True, null=True)),
                        ("outcome", models.CharField(blank=True, default="", max_length=32)),
                        ("error_code", models.CharField(blank=True, default="", max_length=64)),
                        ("usage", models.JSONField(blank=True, default=dict)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name": "pipeline phase 1 job",
                        "db_table": "powercontext_pipelinejob",
                        "indexes": [
                            models.Index(fields=["status", "lease_until"], name="pipeline_job_running")
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("scope_id", "session_id"), name="pipeline_job_session_unique"
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("last_success_watermark__gte", 0), ("input_watermark__gte", 0)
                                ),
                                name="pipeline_job_watermarks_valid",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="PipelineOutput",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("scope_id", models.CharField(max_length=256)),
                        ("session_id", models.CharField(max_length=300)),
                        ("watermark", models.BigIntegerField()),
                        ("memories", models.JSONField(default=list)),
                        ("experiences", models.JSONField(default=list)),
                        ("generator", models.CharField(max_length=32)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name": "pipeline phase 1 output",
                        "db_table": "powercontext_pipelineoutput",
                        "indexes": [
                            models.Index(fields=["scope_id", "-watermark"], name="pipeline_output_recent")
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("scope_id", "session_id"), name="pipeline_output_session_unique"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="PipelineSelection",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("scope_id", models.CharField(max_length=256)),
                        (
                            "kind",
                            models.CharField(
                                choices=[("memory", "Memory"), ("experience", "Experience")], max_length=16
                            ),
                        ),
                        ("item_key", models.CharField(max_length=64)),
                        ("session_ids", models.JSONField(default=list)),
                        ("entry_id", models.CharField(blank=True, max_length=128, null=True)),
                        ("candidate_id", models.CharField(blank=True, max_length=128, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "verbose_name": "pipeline selection item",
                        "db_table": "powercontext_pipelineselection",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("scope_id", "kind", "item_key"), name="pipeline_selection_unique"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        relabel_content_types(MOVED, "powercontext", "pipeline"),
    ]
