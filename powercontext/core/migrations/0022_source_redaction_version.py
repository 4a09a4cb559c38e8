"""Issue 33: every Source records the detector version that redacted it. Existing rows get 0
(redacted at capture by an earlier detector, or stored before capture redacted): the background
sweep and ``manage.py redact_sources`` redact them again under the current version."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0021_source_captured_by"),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="redaction_version",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddIndex(
            model_name="source",
            index=models.Index(fields=["redaction_version"], name="source_redaction_version"),
        ),
    ]
