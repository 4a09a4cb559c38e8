"""A real Celery worker, a real Redis broker, the real test database (service mode)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from celery import Celery
from django.db import connection

from powercontext import search
from powercontext.core.models import MemorySearchDocument
from tests.powercontext.factories import make_memory

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    s = connection.settings_dict
    return (
        f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    )


@pytest.fixture
def worker(tmp_path: Path, request: pytest.FixtureRequest):
    broker = os.environ["POWERCONTEXT_TEST_REDIS_URL"]
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": broker,
        "LOG_LEVEL": "WARNING",
        # As in-process tests (tests/conftest.py): the embedding model only where asked for.
        "POWERCONTEXT_EMBEDDINGS": "false",
        **getattr(request, "param", {}),
    }
    log = (tmp_path / "worker.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "powercontext",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    client = Celery("powercontext-test", broker=broker, backend=broker)
    client.conf.task_serializer = "json"
    client.conf.result_serializer = "json"
    client.conf.accept_content = ["json"]
    try:
        yield client
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_rebuilds_and_verifies_the_index_through_redis(worker: Celery) -> None:
    for i in range(30):
        make_memory("worker-scope", f"worker indexed note {i}")
    MemorySearchDocument.objects.all().delete()
    assert not search.verify_index().ok

    # result.get blocks until the worker has consumed the message and run it: no sleeping.
    drift = worker.send_task("powercontext.verify_search_index").get(timeout=120)
    assert drift["missing"] == 30 and drift["ok"] is False
    assert worker.send_task("powercontext.rebuild_search_index", kwargs={"scope_id": "worker-scope"}).get(
        timeout=120
    ) == {"rebuilt_rows": 30}

    assert MemorySearchDocument.objects.filter(scope_id="worker-scope").count() == 30
    assert search.verify_index().ok
    assert worker.send_task("powercontext.verify_search_index").get(timeout=120)["ok"] is True


@pytest.mark.integration
@pytest.mark.parametrize("worker", [{"POWERCONTEXT_EMBEDDINGS": "true"}], indirect=True)
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_embeds_what_async_writes_left_without_vectors(
    worker: Celery, embeddings: object, settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from powercontext.core.models import MemoryEntryVector
    from powercontext.search import maintenance

    settings.POWERCONTEXT_EMBED_WRITES = "async"  # type: ignore[attr-defined]
    monkeypatch.setattr(maintenance, "_dispatch", lambda scope_id: None)  # no thread in this process
    for i in range(20):
        make_memory("embed-scope", f"a note the worker embeds, number {i}")
    assert MemoryEntryVector.objects.filter(scope_id="embed-scope").count() == 0

    swept = worker.send_task("powercontext.embed_pending_sweep").get(timeout=120)
    assert swept == {"scopes": 1}
    ran = worker.send_task("powercontext.embed_pending", args=["embed-scope"]).get(timeout=120)

    assert ran == {"embedded": 0, "remaining": False}  # the sweep's task came first and did it all
    assert MemoryEntryVector.objects.filter(scope_id="embed-scope").count() == 20
    report = search.verify_index(scope_id="embed-scope")
    assert report.ok and report.vectors_pending == 0
