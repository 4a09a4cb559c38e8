"""Sources record who captured them (issue 33): a session's recovery history is the sources its
reader captured. Sources from before this migration are ``local`` (tokenless callers' history);
a constant default, so adding the column rewrites no row on PostgreSQL."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0020_service_heartbeat"),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="captured_by",
            field=models.CharField(default="local", max_length=32),
        ),
    ]
