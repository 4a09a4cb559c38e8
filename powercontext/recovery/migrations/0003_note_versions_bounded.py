"""Note versions are bounded (issue 33): a note keeps its newest
``POWERCONTEXT_RECOVERY_NOTE_VERSIONS`` versions, and the bytes those kept versions take are
reported (``stored_bytes`` per note and per session) next to the current sizes. Notes written
before this migration kept every version: here, in this migration's transaction, each note is
pruned to the configured bound and the new columns are filled from what is left."""

from django.conf import settings
from django.db import migrations, models
from django.db.models import F, Min, Q, Sum

DEFAULT_KEEP = 5  # the setting's default, should a settings module lack it


def bound_and_backfill(apps, schema_editor):
    alias = schema_editor.connection.alias
    RecoverySession = apps.get_model("recovery", "RecoverySession")
    SessionNote = apps.get_model("recovery", "SessionNote")
    SessionNoteVersion = apps.get_model("recovery", "SessionNoteVersion")
    keep = getattr(settings, "POWERCONTEXT_RECOVERY_NOTE_VERSIONS", DEFAULT_KEEP)
    notes = SessionNote.objects.using(alias)
    versions = SessionNoteVersion.objects.using(alias)
    for pk, current in notes.filter(current_version__gt=keep).values_list("pk", "current_version"):
        versions.filter(note_id=pk, version__lte=current - keep).delete()
    kept = versions.values("note_id").annotate(oldest=Min("version"), stored=Sum("size_bytes"))
    for row in kept.order_by("note_id").iterator():
        notes.filter(pk=row["note_id"]).update(oldest_version=row["oldest"], stored_bytes=row["stored"])
    totals = notes.values("session_id").annotate(stored=Sum("stored_bytes"))
    for row in totals.order_by("session_id").iterator():
        RecoverySession.objects.using(alias).filter(pk=row["session_id"]).update(stored_bytes=row["stored"])


class Migration(migrations.Migration):
    dependencies = [
        ("recovery", "0002_source_session_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="recoverysession",
            name="stored_bytes",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="sessionnote",
            name="oldest_version",
            field=models.PositiveIntegerField(default=1),
        ),
        migrations.AddField(
            model_name="sessionnote",
            name="stored_bytes",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.RunPython(bound_and_backfill, migrations.RunPython.noop, elidable=False),
        migrations.AddConstraint(
            model_name="recoverysession",
            constraint=models.CheckConstraint(
                condition=Q(stored_bytes__gte=0), name="recovery_session_stored_valid"
            ),
        ),
        migrations.AddConstraint(
            model_name="sessionnote",
            constraint=models.CheckConstraint(
                condition=Q(oldest_version__gte=1, oldest_version__lte=F("current_version")),
                name="recovery_note_oldest_valid",
            ),
        ),
    ]
