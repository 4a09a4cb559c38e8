"""Shared fixtures. The same suite runs on SQLite and PostgreSQL (DATABASE_URL picks).

Tests that need a service the current run does not have (PostgreSQL-only concurrency, Redis +
a Celery worker, Chromium, promtool) are deselected with a visible banner on a developer machine; with
POWERCONTEXT_TEST_STRICT=1 (set by .ci/run) a missing service fails the run instead.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client

STRICT = os.environ.get("POWERCONTEXT_TEST_STRICT") == "1"


def _vendor() -> str:
    from django.conf import settings

    engine = settings.DATABASES["default"]["ENGINE"]
    return "postgresql" if "postgresql" in engine else "sqlite"


def _missing_services() -> dict[str, str]:
    missing: dict[str, str] = {}
    if _vendor() != "postgresql":
        missing["postgres_only"] = "needs DATABASE_URL=postgres://..."
    else:
        missing["sqlite_only"] = "runs in the SQLite pass"
    if not os.environ.get("POWERCONTEXT_TEST_REDIS_URL"):
        missing["integration"] = "needs POWERCONTEXT_TEST_REDIS_URL (a Redis for a real Celery worker)"
    if not shutil.which(os.environ.get("POWERCONTEXT_TEST_CHROMIUM", "/usr/bin/chromium")):
        missing["browser"] = "needs Debian's chromium (/usr/bin/chromium)"
    if not shutil.which("promtool"):
        missing["promtool"] = "needs promtool (Debian's prometheus package)"
    return missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = _missing_services()
    if _vendor() == "postgresql":
        # Integration and browser tests run once, in the PostgreSQL pass (service mode).
        pass
    else:
        missing.setdefault("integration", "runs in the PostgreSQL pass")
        missing.setdefault("browser", "runs in the PostgreSQL pass")
    keep: list[pytest.Item] = []
    dropped: dict[str, int] = {}
    for item in items:
        marker = next((m for m in missing if item.get_closest_marker(m)), None)
        if marker is None:
            keep.append(item)
        else:
            dropped[marker] = dropped.get(marker, 0) + 1
    if not dropped:
        return
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    lines = [
        f"  {count} '{marker}' tests not run here: {missing[marker]}"
        for marker, count in sorted(dropped.items())
    ]
    if reporter is not None:
        reporter.write_line("PowerContext: tests deselected for this database/service set:")
        for line in lines:
            reporter.write_line(line)
    required = [line for marker, line in zip(sorted(dropped), lines, strict=True) if marker != "sqlite_only"]
    if STRICT and _vendor() == "postgresql" and required:
        raise pytest.UsageError(
            "POWERCONTEXT_TEST_STRICT=1 but a required service is missing:\n" + "\n".join(required)
        )


def pytest_configure(config: pytest.Config) -> None:
    expected = os.environ.get("POWERCONTEXT_TEST_EXPECT_VENDOR")
    if expected and expected != _vendor():
        raise pytest.UsageError(f"expected the {expected} database, but DATABASE_URL selects {_vendor()}")


class Api:
    """A thin JSON client over Django's test client."""

    def __init__(self, client: Client, token: str | None = None) -> None:
        self.client = client
        self.token = token

    def _headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.token}"} if self.token else {}

    def post(
        self,
        path: str,
        body: Any = None,
        *,
        raw: bytes | str | None = None,
        content_type: str = "application/json",
    ):
        data = raw if raw is not None else json.dumps(body)
        return self.client.post(path, data=data, content_type=content_type, **self._headers())

    def get(self, path: str, **params: Any):
        return self.client.get(path, params, **self._headers())

    # Convenience wrappers for the Memory operations used everywhere.
    def remember(self, scope_id: str, text: str, kind: str = "note", **extra: Any) -> dict[str, Any]:
        response = self.post(
            "/v1/memory/remember", {"scope_id": scope_id, "kind": kind, "text": text, **extra}
        )
        assert response.status_code == 200, response.content
        return response.json()

    def search(self, scope_id: str, query: str, **extra: Any) -> dict[str, Any]:
        response = self.post("/v1/memory/search", {"scope_id": scope_id, "query": query, **extra})
        assert response.status_code == 200, response.content
        return response.json()


@pytest.fixture(scope="session", autouse=True)
def _collected_static_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The production static storage (WhiteNoise, compressed, content-hashed names) resolves every
    ``{% static %}`` through the manifest that collectstatic writes, and the admin's pages use it.
    Collect once per run into a private directory, so concurrent runs never share one.

    WhiteNoise's autorefresh mode looks files up per request instead of indexing the whole
    directory each time the middleware is built, which the test client does once per ``Client``
    (30 ms each, about a minute per pass). The production middleware setup (index at start) is
    exercised against a real gunicorn in tests/hardening/test_static_files.py."""
    from django.core.management import call_command
    from django.test import override_settings

    with override_settings(STATIC_ROOT=tmp_path_factory.mktemp("static"), WHITENOISE_AUTOREFRESH=True):
        call_command("collectstatic", interactive=False, verbosity=0)
        yield


_REAL_EMBEDDER: list[Any] = []


def _unavailable_model() -> Any:
    from powercontext.search.vectors.embedding import ModelUnavailable

    raise ModelUnavailable("not requested by this test")


def _shared_model() -> Any:
    from powercontext.search.vectors.embedding import Embedder

    if not _REAL_EMBEDDER:
        _REAL_EMBEDDER.append(Embedder())
    return _REAL_EMBEDDER[0]


@pytest.fixture(autouse=True)
def _embedding_model(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The embedding model is off unless a test asks for the ``embeddings`` fixture.

    So every other test runs the fallback the product takes when the model cannot load (writes
    skip the vector step, ``auto`` = ``fts``, ``vector``/``hybrid`` unsupported), and the tests
    that ask for the model share one real instance per run (it loads in ~0.3 s)."""
    from powercontext.search.fulltext import bm25
    from powercontext.search.vectors import embedding, vector_cache

    wanted = "embeddings" in request.fixturenames
    monkeypatch.setattr(embedding, "load_embedder", _shared_model if wanted else _unavailable_model)
    embedding.reset()
    vector_cache.clear_cache()
    bm25.clear_cache()  # figures kept per (scope, head revision): another test's scope had those
    yield
    embedding.reset()
    vector_cache.clear_cache()
    bm25.clear_cache()


@pytest.fixture(autouse=True)
def _tokens_optional(settings: Any) -> None:
    """Both vendors run the suite with tokens optional (the embedded default); PostgreSQL is
    service mode, where they are required by default. Tests of the requirement set it."""
    settings.POWERCONTEXT_REQUIRE_TOKEN = False


@pytest.fixture(autouse=True)
def _embed_writes(settings: Any) -> Iterator[None]:
    """Tests run with vectors written in the writer's transaction (``sync``), as before
    embedding after commit existed; tests of ``async`` set it themselves and drive the embedder
    (``search.vectors.pending``) explicitly. A thread a test started is stopped after it."""
    from powercontext.search.vectors import pending

    settings.POWERCONTEXT_EMBED_WRITES = "sync"
    yield
    pending.stop_worker()


@pytest.fixture
def embeddings() -> Any:
    """The real local embedding model (see ``_embedding_model``)."""
    from powercontext.search.vectors import embedding

    model = embedding.embedder()
    assert model is not None, "the embedding model must load in the test environment"
    return model


@pytest.fixture
def api(db: None) -> Api:
    return Api(Client())


@pytest.fixture
def vendor() -> str:
    return connection.vendor


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Give each test run its own test database, so concurrent runs on one machine (a developer
    running the suite while CI or another checkout does) never destroy each other's database."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    test = db.setdefault("TEST", {})
    pid = os.getpid()
    if db["ENGINE"].endswith("sqlite3"):
        base = str(test.get("NAME") or "test-powercontext.sqlite3")
        test["NAME"] = base.replace(".sqlite3", f"-{pid}.sqlite3")
    else:
        test["NAME"] = f"test_{db['NAME']}_{pid}"


@pytest.fixture(autouse=True)
def _prepare_audit_buffer(settings: Any) -> Iterator[None]:
    """No background flusher in tests (a thread would write outside the test's transaction); each
    test starts and ends with an empty prepare-aggregate buffer, flushed only when it asks."""
    from powercontext.prepare import audit as prepare_audit

    settings.POWERCONTEXT_PREPARE_AUDIT_FLUSH_SECONDS = 0
    prepare_audit.buffer().clear()
    yield
    prepare_audit.stop_flusher()
    prepare_audit.buffer().clear()
