"""Engine-specific parts of the Experience index (same design as 0002 for Memory)."""

from django.db import migrations

from powercontext.core.migrations._engines import engine_statements, run_for_vendor

FORWARD, BACKWARD = engine_statements(
    docs="powercontext_experiencesearchdocument",
    key="head_id",
    fts="experience_fts",
    gin="experience_search_document_gin",
)


class Migration(migrations.Migration):
    dependencies = [("powercontext", "0003_experience_search_document")]

    operations = [migrations.RunPython(run_for_vendor(FORWARD), run_for_vendor(BACKWARD))]
