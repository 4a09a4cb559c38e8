"""Migration 0026: the Memory index rows' GIN index is gone on PostgreSQL (no read used it since
the postings, every write kept it), the Experience index keeps its own, and the migration can be
undone. Ranking needs no test here: an index changes no result, and the ranking and agreement
tests run on the migrated schema."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.db import connection

migration = importlib.import_module("powercontext.core.migrations.0026_drop_memory_document_gin")


def gin_indexes() -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, indexname FROM pg_indexes WHERE indexdef LIKE %s"
            " AND tablename IN ('powercontext_memorysearchdocument', 'powercontext_experiencesearchdocument')"
            " ORDER BY 1, 2",
            ["%USING gin%"],
        )
        return [(table, index) for table, index in cursor.fetchall()]


def run(statements: dict[str, list[str]]) -> None:
    with connection.schema_editor() as editor:
        migration.run_for_vendor(statements)(None, editor)


@pytest.mark.django_db
@pytest.mark.postgres_only
def test_only_the_experience_index_keeps_a_gin_index_and_the_drop_can_be_undone() -> None:
    experience = ("powercontext_experiencesearchdocument", "experience_search_document_gin")
    assert gin_indexes() == [experience]

    run(migration.BACKWARD)
    assert gin_indexes() == [experience, ("powercontext_memorysearchdocument", migration.INDEX)]
    run(migration.BACKWARD)  # already there: still fine

    run(migration.FORWARD)
    assert gin_indexes() == [experience]
    run(migration.FORWARD)  # already gone: still fine


@pytest.mark.django_db
@pytest.mark.sqlite_only
def test_on_sqlite_the_migration_runs_both_ways_and_executes_nothing() -> None:
    executed: list[str] = []
    editor = SimpleNamespace(connection=connection, execute=executed.append)
    migration.run_for_vendor(migration.FORWARD)(None, editor)
    migration.run_for_vendor(migration.BACKWARD)(None, editor)
    assert executed == []
