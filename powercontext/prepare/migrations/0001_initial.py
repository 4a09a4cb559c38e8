"""The prepare aggregates, moved here from the ``powercontext`` app (its migration 0012 created
the table). The table keeps its name, so only this app's state changes; content types (and the
permissions granted on the model, ``explain_prepare`` included) are relabelled."""

from django.db import migrations, models

from powercontext.core.migrations._moves import relabel_content_types


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("powercontext", "0015_pipeline_moves_to_its_app"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="PrepareAggregate",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("scope_id", models.CharField(max_length=256)),
                        ("hour", models.DateTimeField()),
                        ("search_mode", models.CharField(max_length=16)),
                        ("prepares", models.BigIntegerField(default=0)),
                        ("empty", models.BigIntegerField(default=0)),
                        ("memory_candidates", models.BigIntegerField(default=0)),
                        ("experience_candidates", models.BigIntegerField(default=0)),
                        ("memory_admitted", models.BigIntegerField(default=0)),
                        ("experience_admitted", models.BigIntegerField(default=0)),
                        ("duplicates", models.BigIntegerField(default=0)),
                        ("skipped_blank", models.BigIntegerField(default=0)),
                        ("skipped_unencodable", models.BigIntegerField(default=0)),
                        ("skipped_item_limit", models.BigIntegerField(default=0)),
                        ("skipped_total_item_limit", models.BigIntegerField(default=0)),
                        ("skipped_over_budget", models.BigIntegerField(default=0)),
                        ("skipped_window", models.BigIntegerField(default=0)),
                        ("truncated_source_cap", models.BigIntegerField(default=0)),
                        ("truncated_budget", models.BigIntegerField(default=0)),
                        ("content_bytes", models.BigIntegerField(default=0)),
                        ("max_bytes", models.BigIntegerField(default=0)),
                        ("latency_us", models.BigIntegerField(default=0)),
                        ("latency_le_1ms", models.BigIntegerField(default=0)),
                        ("latency_le_2ms", models.BigIntegerField(default=0)),
                        ("latency_le_5ms", models.BigIntegerField(default=0)),
                        ("latency_le_10ms", models.BigIntegerField(default=0)),
                        ("latency_le_20ms", models.BigIntegerField(default=0)),
                        ("latency_le_50ms", models.BigIntegerField(default=0)),
                        ("latency_le_100ms", models.BigIntegerField(default=0)),
                        ("latency_le_200ms", models.BigIntegerField(default=0)),
                        ("latency_le_500ms", models.BigIntegerField(default=0)),
                        ("latency_le_1000ms", models.BigIntegerField(default=0)),
                        ("latency_over_1000ms", models.BigIntegerField(default=0)),
                        ("updated_at", models.DateTimeField()),
                    ],
                    options={
                        "verbose_name": "prepare aggregate",
                        "db_table": "powercontext_prepareaggregate",
                        "permissions": [
                            ("explain_prepare", "Can explain a prepare (candidates, decisions and sizes)")
                        ],
                        "indexes": [models.Index(fields=["hour"], name="prepare_aggregate_hour")],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("scope_id", "hour", "search_mode"), name="prepare_aggregate_bucket"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        relabel_content_types(("prepareaggregate",), "powercontext", "prepare"),
    ]
