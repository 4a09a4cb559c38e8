from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0010_memory_entry_vector"),
    ]

    operations = [
        migrations.AddField(
            model_name="artifactrevision",
            name="searchable_text",
            field=models.TextField(blank=True, default=""),
        ),
    ]
