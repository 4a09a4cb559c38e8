"""``core.sql.one_of``: a list of ids as one array parameter on PostgreSQL, so a statement's text
is the same whatever the count and psycopg prepares it; ``IN`` with a placeholder each on SQLite."""

from __future__ import annotations

import pytest
from django.db import connection

from powercontext.core.models import MemoryMembership
from powercontext.core.sql import one_of
from tests.powercontext.factories import make_memory


@pytest.mark.django_db
def test_one_of_selects_the_listed_ids_and_keeps_one_statement_text_on_postgresql() -> None:
    for n in range(6):
        make_memory("ids", f"note {n} about the harbour")
    pks = sorted(MemoryMembership.objects.filter(scope_id="ids").values_list("pk", flat=True))
    table = MemoryMembership._meta.db_table
    texts = set()
    lists = [[pks[0]], pks[1:4], pks, [pks[2], pks[0]], [-1], pks[:2], pks[3:]]
    for chosen in lists:
        condition, params = one_of("m.id", chosen)
        sql = f"SELECT m.id FROM {table} m WHERE {condition} ORDER BY m.id"
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            assert [row[0] for row in cursor.fetchall()] == sorted(set(chosen) & set(pks))
        texts.add(sql)
    assert len(texts) == (1 if connection.vendor == "postgresql" else len({len(ids) for ids in lists}))
    if connection.vendor == "postgresql":  # run seven times: prepared (threshold 5), not planned each time
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", ["%m.id = ANY%"]
            )
            assert cursor.fetchone()[0] == 1
