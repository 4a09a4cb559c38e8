"""Engine-specific parts of the Memory index (see ``_engines``)."""

from django.db import migrations

from powercontext.core.migrations._engines import engine_statements, run_for_vendor

FORWARD, BACKWARD = engine_statements(
    docs="powercontext_memorysearchdocument",
    key="membership_id",
    fts="memory_fts",
    gin="memory_search_document_gin",
)


class Migration(migrations.Migration):
    dependencies = [("powercontext", "0001_initial")]

    operations = [migrations.RunPython(run_for_vendor(FORWARD), run_for_vendor(BACKWARD))]
