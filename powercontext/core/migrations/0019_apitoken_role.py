from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0018_artifact_recallable"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="role",
            field=models.CharField(
                choices=[("agent", "Agent"), ("operator", "Operator")], default="agent", max_length=16
            ),
        ),
    ]
