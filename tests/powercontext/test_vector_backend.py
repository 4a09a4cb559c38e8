"""Which vector search path serves the database, and pgvector detection (PostgreSQL)."""

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
from tests.powercontext.factories import make_memory


@pytest.fixture(autouse=True)
def fresh_detection(settings: Any) -> Iterator[None]:
    # Each test starts from the default path choice, whatever the pass set (tests change it).
    settings.POWERCONTEXT_VECTOR_SEARCH = "auto"
    backend.forget_detection()
    yield
    backend.forget_detection()


@pytest.mark.django_db
def test_the_development_database_has_no_pgvector_and_vectors_are_searched_in_process() -> None:
    detected = backend.vector_backend()

    assert detected.pgvector is None
    if connection.vendor == "postgresql":
        # The real catalog answers: pgvector is not packaged for this Debian release.
        assert detected.search == backend.IN_PROCESS
        assert detected.as_dict() == {"search": "in-process exact", "pgvector": "absent"}
    else:
        # sqlite-vec is loaded but not used by default (tests/powercontext/test_sqlite_vec.py).
        version = getattr(connection, "sqlite_vec_version", None)
        assert detected.search == backend.IN_PROCESS
        state = "not loaded" if version is None else f"loaded ({version}), not used"
        assert detected.as_dict() == {
            "search": "in-process exact",
            "pgvector": "not applicable",
            "sqlite_vec": state,
        }


@pytest.mark.django_db
def test_detection_queries_the_catalog_once_per_process_and_database() -> None:
    with CaptureQueriesContext(connection) as first:
        backend.vector_backend()
    with CaptureQueriesContext(connection) as again:
        backend.vector_backend()
        backend.vector_backend()

    expected = 1 if connection.vendor == "postgresql" else 0
    assert len(first.captured_queries) == expected
    assert "pg_extension" in " ".join(q["sql"] for q in first.captured_queries) or not expected
    assert len(again.captured_queries) == 0


@pytest.mark.django_db
def test_an_installed_extension_is_reported_but_the_in_process_path_stays_in_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if connection.vendor != "postgresql":
        assert backend.vector_backend().pgvector_state() == "not applicable"
        return
    # A test double at the catalog query: pgvector cannot be installed on this server.
    monkeypatch.setattr(backend, "installed_pgvector_version", lambda: "0.7.4")

    detected = backend.vector_backend()

    assert detected.pgvector == "0.7.4"
    assert detected.search == backend.IN_PROCESS
    assert detected.describe() == "vector search: in-process exact; pgvector: installed (0.7.4), not used"
    assert search.verify_index().as_dict()["vectors"]["pgvector"] == "installed (0.7.4), not used"


@pytest.mark.django_db
def test_verify_and_rebuild_report_the_vector_path() -> None:
    make_memory("alpha", "deploy the database")

    report = search.verify_index().as_dict()
    out = io.StringIO()
    call_command("rebuild_search_index", "--no-progress", stdout=out)
    verify_out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", stdout=verify_out)

    state = "absent" if connection.vendor == "postgresql" else "not applicable"
    assert report["vectors"]["search"] == "in-process exact"
    assert report["vectors"]["pgvector"] == state
    if connection.vendor == "postgresql":
        assert f"vector search: in-process exact; pgvector: {state}" in out.getvalue()
    else:
        assert "vector search: in-process exact; sqlite-vec: " in out.getvalue()
    assert json.loads(verify_out.getvalue())["vectors"]["pgvector"] == state
