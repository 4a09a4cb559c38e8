"""A database that answers but refuses writes: full (SQLite at its page limit) or read-only
(PostgreSQL ``default_transaction_read_only``). Writes answer 503 with a code that names the
fault and Retry-After, reads keep working, readiness says ``writes: failing``, and the log
names the cause without any query or id."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from tests.api.helpers import assert_error

SCOPE = "faulty-scope"
BIG = "a note that needs room of its own " * 200


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def warnings_logged() -> Iterator[_Lines]:
    handler = _Lines()
    logging.getLogger().addHandler(handler)
    yield handler
    logging.getLogger().removeHandler(handler)


def _remember(client: Client, text: str) -> Any:
    return client.post(
        "/v1/memory/remember",
        {"scope_id": SCOPE, "kind": "note", "text": text},
        content_type="application/json",
    )


def _assert_reads_and_readiness(client: Client) -> None:
    search = client.post(
        "/v1/memory/search", {"scope_id": SCOPE, "query": "note"}, content_type="application/json"
    )
    assert search.status_code == 200, search.content
    assert search.json()["hits"]
    ready = client.get("/health/ready")
    assert ready.status_code == 503
    assert int(ready["Retry-After"]) > 0
    assert ready.json()["checks"] == {"database": "ready", "migrations": "ready", "writes": "failing"}


def _assert_logged(lines: list[str], cause: str) -> None:
    assert any(line.startswith(f"database refused a write cause={cause} error_class=") for line in lines), (
        lines
    )
    assert not any(SCOPE in line for line in lines), lines


# SQLite's page limit makes the file "full"; PostgreSQL's full disk is the same mapping (SQLSTATE
# 53100 in powercontext/core/db_faults.py) and is not simulated here.
@pytest.mark.sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_full_sqlite_database_refuses_writes_with_503_database_full_and_keeps_reading(
    warnings_logged: _Lines,
) -> None:
    client = Client(raise_request_exception=False)
    assert _remember(client, "a first note before the disk fills").status_code == 200
    client.get("/health/ready")  # the probe's row exists: what fills up below is the room for new rows
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA page_count")
        pages = cursor.fetchone()[0]
        cursor.execute(f"PRAGMA max_page_count = {pages}")  # this connection: the file is "full"
    try:
        refused = None
        for i in range(200):  # the free room inside the last pages runs out within a few writes
            response = _remember(client, f"{BIG} {i}")
            if response.status_code != 200:
                refused = response
                break
        assert refused is not None, "the database never filled up"
        assert_error(refused, 503, "database_full")
        assert int(refused["Retry-After"]) > 0
        _assert_logged(warnings_logged.lines, "database_full")
        _assert_reads_and_readiness(client)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA max_page_count = 1073741823")
    assert _remember(client, "written once there is room again").status_code == 200


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_read_only_postgresql_refuses_writes_with_503_database_read_only_and_keeps_reading(
    warnings_logged: _Lines,
) -> None:
    client = Client(raise_request_exception=False)
    assert _remember(client, "a note written before the database turned read-only").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION default_transaction_read_only = on")
    try:
        refused = _remember(client, "a note the read-only database refuses")
        assert_error(refused, 503, "database_read_only")
        assert int(refused["Retry-After"]) > 0
        _assert_logged(warnings_logged.lines, "database_read_only")
        _assert_reads_and_readiness(client)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION default_transaction_read_only = off")
    assert _remember(client, "written once the database accepts writes again").status_code == 200
