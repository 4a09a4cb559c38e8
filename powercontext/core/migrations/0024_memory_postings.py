"""PostgreSQL: the Memory index's postings — one row per (index token, document) with the
token's frequency in the document and the document's length — kept in step with
``powercontext_memorysearchdocument`` by statement-level triggers (insert, delete, update of
``terms``, truncate: test flushes included), filled here from the rows already indexed.

The ranking statement reads a query token's postings by an index-only scan of
``memory_posting_token`` (token, document: a removed document's postings are found by
probing it) instead of evaluating every matched document's ``tsvector`` once per
query token (``engines.PostgresEngine``): the same BM25, 7-16x faster where the query's words
are common in a large scope (docs/retrieval.md, "Postings on PostgreSQL"). Tokens carry the
scope key, so a token's postings are its scope's. SQLite keeps FTS5, whose postings these are
the equivalent of: nothing is created there.

Storage: ~30 rows per entry (its distinct tokens), ~3.8 KB per entry with the index (a
100,000-entry scope: 201 MB of rows, 177 MB of index, beside 185 MB for the documents and their
GIN index). Filling it takes ~7 s per 100,000 entries, under the migration's lock.
"""

from django.db import migrations

from ._engines import run_for_vendor

DOCS = "powercontext_memorysearchdocument"
POSTINGS = "powercontext_memoryposting"

# The postings of the rows a statement added (``added``) and removed (``removed``).
ADD = f"""INSERT INTO {POSTINGS} (token, doc_key, tf, length)
    SELECT u.lexeme, n.membership_id, cardinality(u.positions), n.length
    FROM added n CROSS JOIN LATERAL unnest(n.document) AS u(lexeme, positions, weights)
    WHERE cardinality(u.positions) > 0;"""
REMOVE = f"""DELETE FROM {POSTINGS} p USING removed o,
    LATERAL unnest(o.document) AS u(lexeme, positions, weights)
    WHERE p.token = u.lexeme AND p.doc_key = o.membership_id;"""


def trigger_function(name: str, body: str) -> str:
    return (
        f"CREATE FUNCTION {POSTINGS}_{name}() RETURNS trigger LANGUAGE plpgsql AS $$"
        f" BEGIN {body} RETURN NULL; END $$"
    )


FORWARD = {
    "sqlite": [],
    "postgresql": [
        f"CREATE TABLE {POSTINGS} (token text NOT NULL, doc_key bigint NOT NULL,"
        " tf integer NOT NULL, length integer NOT NULL)",
        trigger_function("add", ADD),
        trigger_function("remove", REMOVE),
        trigger_function("replace", REMOVE + " " + ADD),
        trigger_function("clear", f"TRUNCATE {POSTINGS};"),
        f"CREATE TRIGGER {POSTINGS}_ai AFTER INSERT ON {DOCS} REFERENCING NEW TABLE AS added"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {POSTINGS}_add()",
        f"CREATE TRIGGER {POSTINGS}_ad AFTER DELETE ON {DOCS} REFERENCING OLD TABLE AS removed"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {POSTINGS}_remove()",
        f"CREATE TRIGGER {POSTINGS}_au AFTER UPDATE ON {DOCS}"
        " REFERENCING OLD TABLE AS removed NEW TABLE AS added"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {POSTINGS}_replace()",
        f"CREATE TRIGGER {POSTINGS}_at AFTER TRUNCATE ON {DOCS}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {POSTINGS}_clear()",
        f"INSERT INTO {POSTINGS} (token, doc_key, tf, length)"
        " SELECT u.lexeme, d.membership_id, cardinality(u.positions), d.length"
        f" FROM {DOCS} d CROSS JOIN LATERAL unnest(d.document) AS u(lexeme, positions, weights)"
        " WHERE cardinality(u.positions) > 0",
        f"CREATE INDEX memory_posting_token ON {POSTINGS} (token, doc_key) INCLUDE (tf, length)",
        f"ANALYZE {POSTINGS}",
    ],
}
BACKWARD = {
    "sqlite": [],
    "postgresql": [
        f"DROP TRIGGER IF EXISTS {POSTINGS}_at ON {DOCS}",
        f"DROP TRIGGER IF EXISTS {POSTINGS}_au ON {DOCS}",
        f"DROP TRIGGER IF EXISTS {POSTINGS}_ad ON {DOCS}",
        f"DROP TRIGGER IF EXISTS {POSTINGS}_ai ON {DOCS}",
        f"DROP FUNCTION IF EXISTS {POSTINGS}_clear()",
        f"DROP FUNCTION IF EXISTS {POSTINGS}_replace()",
        f"DROP FUNCTION IF EXISTS {POSTINGS}_remove()",
        f"DROP FUNCTION IF EXISTS {POSTINGS}_add()",
        f"DROP TABLE IF EXISTS {POSTINGS}",
    ],
}


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0023_membership_active_index"),
    ]

    operations = [
        migrations.RunPython(run_for_vendor(FORWARD), run_for_vendor(BACKWARD)),
    ]
