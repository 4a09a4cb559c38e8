"""Which vector search path serves the database, and pgvector detection (PostgreSQL).

Runs on every database: the plain PostgreSQL of the main pass has no pgvector (Debian does not
package it), the pgvector pass (POWERCONTEXT_TEST_EXPECT_PGVECTOR=1) has it set up, and these
tests assert what each one must report. tests/powercontext/test_pgvector.py covers the path."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from powercontext import search
from powercontext.search import vector_backend as backend
from powercontext.search import vector_inprocess, vector_pgvector
from tests.conftest import EXPECT_PGVECTOR
from tests.powercontext.factories import make_memory


@pytest.fixture(autouse=True)
def fresh_detection(settings: Any) -> Iterator[None]:
    # Each test starts from the pass's path choice: pgvector in the pgvector pass, else the default
    # (the sqlite-vec pass included: its own tests are in test_sqlite_vec.py). Tests change it.
    settings.POWERCONTEXT_VECTOR_SEARCH = "pgvector" if EXPECT_PGVECTOR else "auto"
    backend.forget_detection()
    yield
    backend.forget_detection()


def expected_report() -> dict[str, object]:
    """What this run's database must report (the real catalog answers)."""
    if connection.vendor != "postgresql":
        # The default does not load sqlite-vec: ``auto`` ranks in process on the standard driver.
        version = getattr(connection, "sqlite_vec_version", None)
        state = "not loaded" if version is None else f"loaded ({version}), not used"
        return {"search": "in-process exact", "pgvector": "not applicable", "sqlite_vec": state}
    if EXPECT_PGVECTOR:
        version = backend.installed_pgvector_version()
        return {"search": "pgvector", "pgvector": f"installed ({version}), in use"}
    # pgvector is not packaged for this Debian release: the main PostgreSQL pass has none.
    return {"search": "in-process exact", "pgvector": "absent"}


@pytest.mark.django_db
def test_the_database_reports_the_vector_path_it_has() -> None:
    detected = backend.vector_backend()

    assert detected.as_dict() == expected_report()
    if EXPECT_PGVECTOR:  # the pgvector pass fails unless pgvector really serves vector search
        assert detected.search == backend.PGVECTOR == "pgvector"
        assert detected.pgvector is not None and detected.pgvector_set_up
        assert backend.ranker() is vector_pgvector
    else:
        assert detected.search == backend.IN_PROCESS
        assert detected.pgvector is None
        assert backend.ranker() is vector_inprocess


@pytest.mark.django_db
def test_detection_queries_the_catalog_once_per_process_and_database() -> None:
    with CaptureQueriesContext(connection) as first:
        backend.vector_backend()
    with CaptureQueriesContext(connection) as again:
        backend.vector_backend()
        backend.vector_backend()

    # The extension's version, then (pgvector only) whether its side tables exist.
    expected = 0 if connection.vendor != "postgresql" else 2 if EXPECT_PGVECTOR else 1
    assert len(first.captured_queries) == expected
    assert "pg_extension" in " ".join(q["sql"] for q in first.captured_queries) or not expected
    assert len(again.captured_queries) == 0


@pytest.mark.django_db
def test_the_default_setting_chooses_the_in_process_ranker_without_a_query(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    # An installed extension whose side tables are not set up would cost a catalog query per
    # detection; the prepare path (ranker, twice per hybrid prepare) must not pay it.
    monkeypatch.setattr(backend, "installed_pgvector_version", lambda: "0.7.4")
    monkeypatch.setattr(vector_pgvector, "is_set_up", lambda: False)
    connection.ensure_connection()
    for setting in ("auto", "in-process"):
        settings.POWERCONTEXT_VECTOR_SEARCH = setting
        with CaptureQueriesContext(connection) as queries:
            for _ in range(3):
                assert backend.ranker() is vector_inprocess
        assert queries.captured_queries == []
    calls: list[int] = []
    monkeypatch.setattr(vector_pgvector, "is_set_up", lambda: calls.append(1) or False)
    for setting in ("auto", "in-process"):
        settings.POWERCONTEXT_VECTOR_SEARCH = setting
        backend.ranker()
    assert calls == []


@pytest.mark.django_db
def test_an_installed_extension_is_used_only_when_asked_for_and_set_up(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    if connection.vendor != "postgresql":
        assert backend.vector_backend().pgvector_state() == "not applicable"
        return
    settings.POWERCONTEXT_VECTOR_SEARCH = "pgvector"
    # Test doubles at the two catalog queries (the pgvector pass asserts the real ones).
    set_up = [False]
    checks: list[bool] = []

    def is_set_up() -> bool:
        checks.append(set_up[0])
        return set_up[0]

    monkeypatch.setattr(backend, "installed_pgvector_version", lambda: "0.7.4")
    monkeypatch.setattr(vector_pgvector, "is_set_up", is_set_up)

    detected = backend.vector_backend()
    assert (detected.pgvector, detected.pgvector_set_up, detected.search) == (
        "0.7.4",
        False,
        backend.IN_PROCESS,
    )
    assert detected.describe() == (
        "vector search: in-process exact; pgvector: installed (0.7.4), not set up: run rebuild_search_index"
    )
    assert backend.ranker() is vector_inprocess
    assert search.verify_index().as_dict()["vectors"]["pgvector"] == (
        "installed (0.7.4), not set up: run rebuild_search_index"
    )
    assert "pgvector_mirror" not in search.verify_index().as_dict()["vectors"]

    set_up[0] = True  # another process ran rebuild_search_index: seen on the next use
    assert backend.vector_backend().as_dict() == {
        "search": "pgvector",
        "pgvector": "installed (0.7.4), in use",
    }
    assert backend.ranker() is vector_pgvector
    checked = len(checks)
    backend.vector_backend()
    assert len(checks) == checked  # once set up, not asked again

    for setting in ("in-process", "auto"):  # auto ranks in process: measured faster
        settings.POWERCONTEXT_VECTOR_SEARCH = setting
        assert backend.vector_backend().as_dict() == {
            "search": "in-process exact",
            "pgvector": "installed (0.7.4), set up, not used (POWERCONTEXT_VECTOR_SEARCH=pgvector uses it)",
        }
        assert backend.ranker() is vector_inprocess


@pytest.mark.django_db
def test_verify_and_rebuild_report_the_vector_path() -> None:
    make_memory("alpha", "deploy the database")
    expected = expected_report()

    report = search.verify_index().as_dict()
    out = io.StringIO()
    call_command("rebuild_search_index", "--no-progress", stdout=out)
    verify_out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", stdout=verify_out)

    assert {key: report["vectors"][key] for key in expected} == expected  # type: ignore[index]
    assert f"vector search: {expected['search']}; " in out.getvalue()
    if connection.vendor == "postgresql":
        assert f"pgvector: {expected['pgvector']}" in out.getvalue()
    else:
        assert f"sqlite-vec: {expected['sqlite_vec']}" in out.getvalue()
    assert json.loads(verify_out.getvalue())["vectors"]["pgvector"] == expected["pgvector"]
