"""Issue 22, speed: no heavy import on the Inbox's path, and a fresh worker is warmed up without
waiting for the embedding model (powercontext/warmup.py, gunicorn.conf.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from powercontext import warmup
from powercontext.search.vectors import embedding
from tests.fresh_process import run_script

HEAVY = ("numpy", "onnxruntime", "tokenizers")

# A fresh process: a reviewer logs in and opens the queue, a candidate, its history and the
# log-in page; it prints which heavy packages were imported by then.
SCRIPT = """
import json, sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth.models import User
from django.test import Client
from powercontext import warmup
from powercontext.memory.sources import source_capture
from review import services
warmup.warm_up_web()
source = source_capture(scope_id="payments-ledger", source_id="s1", content="Pin it.", metadata=None)
user = User.objects.create_user("startup-reviewer", is_superuser=True)
candidate = services.candidate_propose(
    scope_id="payments-ledger",
    family="experience",
    submission=services.Submission(
        proposal={"situation": "s", "action": "a", "outcome": "o", "lesson": "Pin the base image."},
        source_refs=[{"name": source.source_type, "source_id": source.source_id}],
        artifact_refs=[], target=None, reason=None,
    ),
)
client = Client()
statuses = [client.get("/accounts/login/").status_code]
client.force_login(user)
for path in ("/review/", f"/review/candidates/{candidate.pk}/", f"/review/candidates/{candidate.pk}/history/"):
    statuses.append(client.get(path).status_code)
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[1:]))
print(json.dumps({"statuses": statuses, "heavy": heavy}))
"""


def test_the_inbox_pages_import_no_numpy_onnxruntime_or_tokenizers(tmp_path: Path) -> None:
    report = run_script(SCRIPT, list(HEAVY), tmp_path)
    assert report["statuses"] == [200, 200, 200, 200]
    assert report["heavy"] == []


def test_warm_up_loads_the_model_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    loaded = threading.Event()

    def slow_model_load() -> bool:
        release.wait(timeout=30)
        loaded.set()
        return True

    monkeypatch.setattr(embedding, "warm_up", slow_model_load)
    thread = warmup.warm_up()  # returns while the model is still loading
    assert thread.is_alive() and not loaded.is_set()
    release.set()
    thread.join(timeout=30)
    assert loaded.is_set()


def test_a_gunicorn_worker_loads_the_model_before_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    monkeypatch.setattr(warmup, "warm_up_web", lambda: order.append("web"))
    monkeypatch.setattr(embedding, "warm_up", lambda: order.append("model") or True)
    monkeypatch.setattr(warmup, "preload_recent_scopes", lambda: order.append("preload"))
    warmup.warm_up_worker()  # returns only once all are done
    assert order == ["web", "model", "preload"]
