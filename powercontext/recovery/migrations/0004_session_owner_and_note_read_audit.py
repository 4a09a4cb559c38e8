"""Recovery sessions belong to their owner (issue 33): ``owner`` is the ``owner_key`` of the caller
whose write created the session (``token:<pk>``, or ``local`` for tokenless calls). Sessions from
before this migration get ``local``: no token can read or write them afterwards (an operator still
reads them with an audited reason), and the embedded single-user default, whose calls carry no
token, keeps them. ``NoteReadAudit`` records every operator read of a note it does not own."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("recovery", "0003_note_versions_bounded"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="recoverysession",
            name="owner",
            field=models.CharField(default="local", max_length=32),
        ),
        migrations.CreateModel(
            name="NoteReadAudit",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("reader", models.CharField(max_length=32)),
                ("reason", models.TextField()),
                ("scope_id", models.CharField(max_length=256)),
                ("session_id", models.CharField(max_length=256)),
                ("session_owner", models.CharField(max_length=32)),
                ("path", models.CharField(max_length=256)),
                ("version", models.PositiveIntegerField()),
                ("created_at", models.DateTimeField()),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "note read audit",
                "indexes": [models.Index(fields=["scope_id", "session_id"], name="recovery_audit_session")],
            },
        ),
    ]
