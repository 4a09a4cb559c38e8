"""The GIN index on the Memory index rows' ``document`` (PostgreSQL), dropped.

Since the postings (0024) no statement reads Memory rows through it: the ranking, the document
frequencies and the reranker's counts read ``powercontext_memoryposting`` by token, and the
postings triggers read the ``document`` column of the rows a statement changed (the column
stays). On the benchmark's database, after every benchmark of issues 31 and 35, it had served no
scan (``pg_stat_user_indexes``) while every Memory write kept it: 966 MB for 1.1 million rows
(~0.9 KB an entry). The Experience index keeps its own (its ranking reads rows by ``@@``).
SQLite has nothing to change. Reversible: the index is built again.
"""

from django.db import migrations

from ._engines import run_for_vendor

INDEX = "memory_search_document_gin"
DOCS = "powercontext_memorysearchdocument"

FORWARD = {"sqlite": [], "postgresql": [f"DROP INDEX IF EXISTS {INDEX}"]}
BACKWARD = {
    "sqlite": [],
    "postgresql": [
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON {DOCS} USING gin (document) WITH (fastupdate = off)"
    ],
}


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0025_memory_index_totals"),
    ]

    operations = [migrations.RunPython(run_for_vendor(FORWARD), run_for_vendor(BACKWARD))]
