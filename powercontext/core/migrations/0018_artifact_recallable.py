"""Artifact heads get a ``recallable`` column, set by the artifact kernel, that replaces the
four-condition rule recall queries used to spell out (an Experience head that is active, has a
revision and has search text). Existing heads are backfilled from that rule, in this migration's
transaction."""

from django.db import migrations, models
from django.db.models import Q

# The rule as it stood before this column (constants, not the app's code: a migration is frozen).
RECALLABLE = Q(family="experience", state="active", current_revision__gte=1) & ~Q(searchable_text="")


def backfill(apps, schema_editor):
    Artifact = apps.get_model("powercontext", "Artifact")
    Artifact.objects.using(schema_editor.connection.alias).filter(RECALLABLE).update(recallable=True)


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0017_drop_pgvector_side_tables"),
    ]

    operations = [
        migrations.AddField(
            model_name="artifact",
            name="recallable",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
        migrations.AddIndex(
            model_name="artifact",
            index=models.Index(
                condition=Q(recallable=True), fields=["scope_id"], name="artifact_recallable_scope"
            ),
        ),
    ]
