"""Issue 35: an index of the head's active memberships per scope, in id order, carrying their
entry versions (PostgreSQL: INCLUDE, so the read is an index-only scan). A cold scope's vector
read joined from it instead of scanning every scope's memberships: 18.3 -> 2.5 ms for a
1,400-entry scope among 114,800 memberships on PostgreSQL, and the scan grew with the number of
scopes. Building it locks writes to the table while it runs (seconds per million rows)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0022_source_redaction_version"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memorymembership",
            index=models.Index(
                condition=models.Q(("state", "active"), ("to_revision__isnull", True)),
                fields=["scope_id", "id"],
                include=("entry_version",),
                name="membership_active",
            ),
        ),
    ]
