"""The Memory index's totals per scope — its number of documents and the sum of their lengths,
BM25's N and average length — kept in step with ``powercontext_memorysearchdocument`` by
triggers (PostgreSQL: statement-level, insert, delete, update, truncate; SQLite: row-level),
filled here from the rows already indexed.

Counting them read every index row of the scope once per Memory head: after each write, the next
prepare of a 100,000-entry scope spent ~100 ms (PostgreSQL) counting. Now one row by key
(``search.fulltext.bm25``). A scope's writers already take its Memory head's lock, so the row
each write updates adds no waiting between writers.
"""

from django.db import migrations

from ._engines import run_for_vendor

DOCS = "powercontext_memorysearchdocument"
TOTALS = "powercontext_memoryindextotals"

CREATE = (
    f"CREATE TABLE {TOTALS} (scope_id varchar(256) NOT NULL PRIMARY KEY,"
    " documents bigint NOT NULL, total_length bigint NOT NULL)"
)
FILL = (
    f"INSERT INTO {TOTALS} (scope_id, documents, total_length)"
    f" SELECT scope_id, count(*), sum(length) FROM {DOCS} GROUP BY scope_id"
)

# PostgreSQL: the rows a statement added (``added``) and removed (``removed``), by scope.
ADD = f"""INSERT INTO {TOTALS} AS t (scope_id, documents, total_length)
    SELECT scope_id, count(*), sum(length) FROM added GROUP BY scope_id ORDER BY scope_id
    ON CONFLICT (scope_id) DO UPDATE SET documents = t.documents + excluded.documents,
    total_length = t.total_length + excluded.total_length;"""
REMOVE = f"""UPDATE {TOTALS} t SET documents = t.documents - r.documents,
    total_length = t.total_length - r.total_length
    FROM (SELECT scope_id, count(*) AS documents, sum(length) AS total_length FROM removed
    GROUP BY scope_id) r WHERE t.scope_id = r.scope_id;"""


def trigger_function(name: str, body: str) -> str:
    return (
        f"CREATE FUNCTION {TOTALS}_{name}() RETURNS trigger LANGUAGE plpgsql AS $$"
        f" BEGIN {body} RETURN NULL; END $$"
    )


SQLITE_ADD = f"""INSERT INTO {TOTALS} (scope_id, documents, total_length)
    VALUES (new.scope_id, 1, new.length) ON CONFLICT (scope_id) DO UPDATE SET
    documents = documents + 1, total_length = total_length + excluded.total_length;"""
SQLITE_REMOVE = f"""UPDATE {TOTALS} SET documents = documents - 1,
    total_length = total_length - old.length WHERE scope_id = old.scope_id;"""

FORWARD = {
    "sqlite": [
        CREATE,
        f"CREATE TRIGGER {TOTALS}_ai AFTER INSERT ON {DOCS} BEGIN {SQLITE_ADD} END",
        f"CREATE TRIGGER {TOTALS}_ad AFTER DELETE ON {DOCS} BEGIN {SQLITE_REMOVE} END",
        f"CREATE TRIGGER {TOTALS}_au AFTER UPDATE OF scope_id, length ON {DOCS}"
        f" BEGIN {SQLITE_REMOVE} {SQLITE_ADD} END",
        FILL,
    ],
    "postgresql": [
        CREATE,
        trigger_function("add", ADD),
        trigger_function("remove", REMOVE),
        trigger_function("replace", REMOVE + " " + ADD),
        trigger_function("clear", f"TRUNCATE {TOTALS};"),
        f"CREATE TRIGGER {TOTALS}_ai AFTER INSERT ON {DOCS} REFERENCING NEW TABLE AS added"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {TOTALS}_add()",
        f"CREATE TRIGGER {TOTALS}_ad AFTER DELETE ON {DOCS} REFERENCING OLD TABLE AS removed"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {TOTALS}_remove()",
        f"CREATE TRIGGER {TOTALS}_au AFTER UPDATE ON {DOCS}"
        " REFERENCING OLD TABLE AS removed NEW TABLE AS added"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {TOTALS}_replace()",
        f"CREATE TRIGGER {TOTALS}_at AFTER TRUNCATE ON {DOCS}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {TOTALS}_clear()",
        FILL,
    ],
}
BACKWARD = {
    "sqlite": [
        f"DROP TRIGGER IF EXISTS {TOTALS}_au",
        f"DROP TRIGGER IF EXISTS {TOTALS}_ad",
        f"DROP TRIGGER IF EXISTS {TOTALS}_ai",
        f"DROP TABLE IF EXISTS {TOTALS}",
    ],
    "postgresql": [
        f"DROP TRIGGER IF EXISTS {TOTALS}_at ON {DOCS}",
        f"DROP TRIGGER IF EXISTS {TOTALS}_au ON {DOCS}",
        f"DROP TRIGGER IF EXISTS {TOTALS}_ad ON {DOCS}",
        f"DROP TRIGGER IF EXISTS {TOTALS}_ai ON {DOCS}",
        f"DROP FUNCTION IF EXISTS {TOTALS}_clear()",
        f"DROP FUNCTION IF EXISTS {TOTALS}_replace()",
        f"DROP FUNCTION IF EXISTS {TOTALS}_remove()",
        f"DROP FUNCTION IF EXISTS {TOTALS}_add()",
        f"DROP TABLE IF EXISTS {TOTALS}",
    ],
}


class Migration(migrations.Migration):
    dependencies = [
        ("powercontext", "0024_memory_postings"),
    ]

    operations = [
        migrations.RunPython(run_for_vendor(FORWARD), run_for_vendor(BACKWARD)),
    ]
