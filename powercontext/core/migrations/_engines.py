"""SQL for the engine-specific parts of a derived search index (used by migrations).

SQLite: an external-content FTS5 table over ``<docs>.terms`` kept in step by triggers (so any
insert, update or delete of a document row, test flushes included, updates the index).
PostgreSQL: a generated ``tsvector`` column parsed from the stored literal, with a GIN index.
Both index only pre-analyzed, scope-keyed ASCII tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def engine_statements(
    *, docs: str, key: str, fts: str, gin: str
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    forward = {
        "sqlite": [
            f"CREATE VIRTUAL TABLE {fts} USING fts5(terms, content='{docs}', content_rowid='{key}', tokenize='ascii')",
            f"""CREATE TRIGGER {fts}_ai AFTER INSERT ON {docs} BEGIN
                INSERT INTO {fts}(rowid, terms) VALUES (new.{key}, new.terms);
            END""",
            f"""CREATE TRIGGER {fts}_ad AFTER DELETE ON {docs} BEGIN
                INSERT INTO {fts}({fts}, rowid, terms) VALUES ('delete', old.{key}, old.terms);
            END""",
            f"""CREATE TRIGGER {fts}_au AFTER UPDATE ON {docs} BEGIN
                INSERT INTO {fts}({fts}, rowid, terms) VALUES ('delete', old.{key}, old.terms);
                INSERT INTO {fts}(rowid, terms) VALUES (new.{key}, new.terms);
            END""",
        ],
        "postgresql": [
            f"ALTER TABLE {docs} ADD COLUMN document tsvector GENERATED ALWAYS AS (terms::tsvector) STORED",
            f"CREATE INDEX {gin} ON {docs} USING gin (document)",
        ],
    }
    backward = {
        "sqlite": [
            f"DROP TRIGGER IF EXISTS {fts}_au",
            f"DROP TRIGGER IF EXISTS {fts}_ad",
            f"DROP TRIGGER IF EXISTS {fts}_ai",
            f"DROP TABLE IF EXISTS {fts}",
        ],
        "postgresql": [f"DROP INDEX IF EXISTS {gin}", f"ALTER TABLE {docs} DROP COLUMN IF EXISTS document"],
    }
    return forward, backward


def run_for_vendor(statements_by_vendor: dict[str, list[str]]) -> Callable[[Any, Any], None]:
    def run(apps: Any, schema_editor: Any) -> None:
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError("PowerContext supports SQLite and PostgreSQL only")
        for statement in statements:
            schema_editor.execute(statement)

    return run
