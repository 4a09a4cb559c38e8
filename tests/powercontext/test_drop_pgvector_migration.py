"""Migration 0017 drops what the removed pgvector path created outside migrations (PostgreSQL),
if it exists, and nothing else; on SQLite it does nothing."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest
from django.db import connection

from powercontext.core.models import ExperienceVector, MemoryEntryVector
from tests.powercontext.test_experience_vectors import seed_heads

migration = importlib.import_module("powercontext.core.migrations.0017_drop_pgvector_side_tables")

NAMES = ("powercontext_pgvector_memory", "powercontext_pgvector_experience")


def create_stand_ins() -> None:
    """The side tables, indexes, trigger functions and statement triggers as the pgvector path
    named them (its ``vector(384)`` column is a ``real[]`` here: this PostgreSQL has no pgvector)."""
    with connection.cursor() as cursor:
        for name, source in migration.MIRRORS:
            cursor.execute(
                f"CREATE TABLE {name} (vector_id bigint PRIMARY KEY, scope_id varchar(256), embedding real[])"
            )
            cursor.execute(f"CREATE INDEX {name}_scope ON {name} (scope_id)")
            cursor.execute(
                f"CREATE FUNCTION {name}_gone() RETURNS trigger LANGUAGE plpgsql AS $$"
                f" BEGIN DELETE FROM {name} WHERE vector_id IN (SELECT id FROM gone); RETURN NULL; END $$"
            )
            cursor.execute(
                f"CREATE FUNCTION {name}_truncated() RETURNS trigger LANGUAGE plpgsql AS $$"
                f" BEGIN TRUNCATE {name}; RETURN NULL; END $$"
            )
            cursor.execute(
                f"CREATE TRIGGER {name}_gone AFTER DELETE ON {source} REFERENCING OLD TABLE AS gone"
                f" FOR EACH STATEMENT EXECUTE FUNCTION {name}_gone()"
            )
            cursor.execute(
                f"CREATE TRIGGER {name}_truncated AFTER TRUNCATE ON {source}"
                f" FOR EACH STATEMENT EXECUTE FUNCTION {name}_truncated()"
            )


def left_over() -> dict[str, list[str]]:
    """The side-table objects present in the current database, by kind."""
    like = "powercontext_pgvector_%"
    with connection.cursor() as cursor:
        found = {}
        for kind, sql in {
            "relations": "SELECT relname FROM pg_class WHERE relname LIKE %s",
            "functions": "SELECT proname FROM pg_proc WHERE proname LIKE %s",
            "triggers": "SELECT tgname FROM pg_trigger WHERE tgname LIKE %s",
        }.items():
            cursor.execute(sql + " ORDER BY 1", [like])
            found[kind] = [row[0] for row in cursor.fetchall()]
    return found


def run_migration() -> None:
    with connection.schema_editor() as editor:
        migration.drop_side_tables(None, editor)


@pytest.mark.django_db
@pytest.mark.postgres_only
def test_it_drops_the_side_tables_triggers_and_functions_and_keeps_the_vector_tables() -> None:
    assert left_over() == {"relations": [], "functions": [], "triggers": []}  # migrated without them
    create_stand_ins()  # tables, their indexes and primary keys, functions, triggers
    assert len(left_over()["relations"]) == 6 and len(left_over()["triggers"]) == 4

    run_migration()

    assert left_over() == {"relations": [], "functions": [], "triggers": []}
    run_migration()  # nothing left to drop: still fine
    # The vector tables stay, and deleting from them needs no trigger function any more.
    heads = seed_heads("s", 2, np.random.default_rng(1))
    assert ExperienceVector.objects.filter(head__in=heads).delete()[0] == 2
    assert MemoryEntryVector.objects.count() == 0


def test_it_does_nothing_on_sqlite_and_never_drops_the_extension() -> None:
    executed: list[str] = []
    editor = SimpleNamespace(connection=SimpleNamespace(vendor="sqlite"), execute=executed.append)
    migration.drop_side_tables(None, editor)
    assert executed == []

    editor.connection.vendor = "postgresql"
    migration.drop_side_tables(None, editor)
    assert executed == migration.statements() and len(executed) == 7
    assert all(" IF EXISTS " in sql for sql in executed)
    assert not any("EXTENSION" in sql.upper() or "CASCADE" in sql.upper() for sql in executed)
    assert {name for name in NAMES if any(name in sql for sql in executed)} == set(NAMES)
