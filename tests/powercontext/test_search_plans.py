"""PostgreSQL plans for a scope its statistics do not know yet.

A scope created since the last ANALYZE (a new repository in a database that holds a large one)
is estimated at one row: a statement that filters by scope and joins may then walk the scope's
rows once per hit. The ranked read and the term counts must look rows up by key instead, so a
new scope's prepare costs what its hits cost, whatever its size.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from powercontext.core.models import MemorySearchDocument
from powercontext.memory.services import NewEntry, memory_apply_changes
from powercontext.search.fulltext import analyzer, bm25, queries
from powercontext.search.fulltext.indexes import MEMORY_INDEX

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db]

_MEMORY_TABLES = {"powercontext_memorymembership", "powercontext_memorysearchdocument"}


def _notes(scope_id: str, texts: list[str]) -> None:
    memory_apply_changes(
        scope_id=scope_id,
        remember=[
            NewEntry(key=str(i), kind="note", text=text, source_refs=[]) for i, text in enumerate(texts)
        ],
        retire_entry_ids=[],
    )


def _a_scope_after_analyze() -> None:
    _notes("plans-known", [f"known scope note {i} about the nightly build" for i in range(300)])
    with connection.cursor() as cursor:
        for table in ("powercontext_memorymembership", "powercontext_memorysearchdocument"):
            cursor.execute(f"ANALYZE {table}")
    # Created after ANALYZE: three of its 200 notes hold "zebrafish".
    _notes(
        "plans-new",
        [
            f"new scope note {i} about {'zebrafish tanks' if i % 70 == 0 else 'the release'}"
            for i in range(200)
        ],
    )


def _rows_read(plan: dict[str, Any]) -> dict[str, int]:
    """Rows each Memory table's scans produced in an EXPLAIN ANALYZE plan (rows x loops)."""
    read: dict[str, int] = {}
    table = plan.get("Relation Name")
    if table in _MEMORY_TABLES:
        read[table] = read.get(table, 0) + int(plan["Actual Rows"]) * int(plan["Actual Loops"])
    for child in plan.get("Plans", []):
        for name, rows in _rows_read(child).items():
            read[name] = read.get(name, 0) + rows
    return read


def _index_conditions(plan: dict[str, Any]) -> list[str]:
    """The index conditions of the plan's scans of the Memory tables."""
    found = (
        [plan["Index Cond"]] if plan.get("Relation Name") in _MEMORY_TABLES and "Index Cond" in plan else []
    )
    for child in plan.get("Plans", []):
        found.extend(_index_conditions(child))
    return found


def test_a_scope_unknown_to_the_statistics_reads_only_its_hits_rows() -> None:
    _a_scope_after_analyze()
    captured: dict[str, Any] = {}

    def capture(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "AS src" in sql:
            captured.update(sql=sql, params=params)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        memory, _, _ = queries.search_context_counted(
            "plans-new", "zebrafish", memory_limit=100, experience_limit=50
        )
    assert len(memory) == 3
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + captured["sql"], captured["params"])
        (document,) = cursor.fetchone()
    plan = (json.loads(document) if isinstance(document, str) else document)[0]["Plan"]
    # Rows are found from the hits, by key: no scan of either table is driven by the scope (its
    # estimate is the one that is wrong), and no table's rows are read more than once over.
    read = _rows_read(plan)
    assert set(read) == _MEMORY_TABLES
    assert all(rows <= 500 for rows in read.values()), read
    assert not [cond for cond in _index_conditions(plan) if "scope_id" in cond]


def test_memory_document_frequencies_are_the_scope_s_index_rows_holding_each_term() -> None:
    _a_scope_after_analyze()
    terms = [analyzer.index_term(word) for word in ("zebrafish", "release", "nightly", "note")]
    rows = MemorySearchDocument.objects.filter(scope_id="plans-new").values_list("terms", flat=True)
    expected = {
        term: sum(f" {token}:" in f" {stored}" for stored in rows)
        for term, token in zip(terms, analyzer.scope_tokens("plans-new", terms), strict=True)
    }
    assert expected == {terms[0]: 3, terms[1]: 197, terms[2]: 0, terms[3]: 200}
    bm25.clear_cache()
    assert bm25.scope_figures(MEMORY_INDEX, "plans-new", terms).frequencies == expected
