"""Engine-specific parts of the derived search index.

SQLite: an external-content FTS5 table over ``powercontext_memorysearchdocument.terms`` kept in
step by triggers (so any insert, update or delete of a document row, including test flushes,
updates the index). PostgreSQL: a generated ``tsvector`` column parsed from the stored literal,
with a GIN index. Both index only pre-analyzed, scope-keyed ASCII tokens.
"""

from django.db import migrations

DOCS = "powercontext_memorysearchdocument"

SQLITE_FORWARD = [
    f"CREATE VIRTUAL TABLE memory_fts USING fts5(terms, content='{DOCS}', content_rowid='membership_id', tokenize='ascii')",
    f"""CREATE TRIGGER memory_fts_ai AFTER INSERT ON {DOCS} BEGIN
        INSERT INTO memory_fts(rowid, terms) VALUES (new.membership_id, new.terms);
    END""",
    f"""CREATE TRIGGER memory_fts_ad AFTER DELETE ON {DOCS} BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, terms) VALUES ('delete', old.membership_id, old.terms);
    END""",
    f"""CREATE TRIGGER memory_fts_au AFTER UPDATE ON {DOCS} BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, terms) VALUES ('delete', old.membership_id, old.terms);
        INSERT INTO memory_fts(rowid, terms) VALUES (new.membership_id, new.terms);
    END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memory_fts_au",
    "DROP TRIGGER IF EXISTS memory_fts_ad",
    "DROP TRIGGER IF EXISTS memory_fts_ai",
    "DROP TABLE IF EXISTS memory_fts",
]
POSTGRES_FORWARD = [
    f"ALTER TABLE {DOCS} ADD COLUMN document tsvector GENERATED ALWAYS AS (terms::tsvector) STORED",
    f"CREATE INDEX memory_search_document_gin ON {DOCS} USING gin (document)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS memory_search_document_gin",
    f"ALTER TABLE {DOCS} DROP COLUMN IF EXISTS document",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError("PowerContext supports SQLite and PostgreSQL only")
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("powercontext", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
