"""Embedding catch-up (issue 35): the background embedder runs several texts at once, each alone
through the model, so every vector is the one ``embed`` gives; every pending entry is embedded
exactly once, entries written during a catch-up are embedded too, and a write is never held up
by a catch-up in progress; ``/health/detail`` reports the embedder's pace and an ETA. Runs on
both databases; the threads are synchronised with events and barriers, never with sleeps."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import numpy as np
import pytest
from django.db import OperationalError
from django.test import Client

from context_api import operator
from powercontext.core.models import MemoryEntryVector
from powercontext.search import maintenance
from powercontext.search.vectors import embedding, pending, vector_index
from tests.powercontext.factories import make_memory

TOKEN = "operator-monitoring-token-0123456789abcdef"
TEXTS = [
    "Ann painted a sunrise over the lake",
    "deploy with gunicorn -w 4 behind nginx; the health check is /health/live",
    "x",
    "the migration adds an index on (scope_id, id) so that a scope's vectors load in one read "
    "without sorting, which matters once a scope holds a hundred thousand entries and more",
    "lunch is served at noon",
]
WAIT = 60  # seconds: a bound for a broken test, never a timer


@pytest.fixture
def async_writes(settings: Any) -> None:
    settings.POWERCONTEXT_EMBED_WRITES = "async"


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_embed_many_gives_each_text_exactly_the_vector_embed_gives(
    embeddings: Any, settings: Any, threads: int
) -> None:
    settings.POWERCONTEXT_EMBED_THREADS = threads

    together = embeddings.embed_many(TEXTS)

    assert len(together) == len(TEXTS)
    for text, vector in zip(TEXTS, together, strict=True):
        assert np.array_equal(vector, embeddings.embed(text))  # bit for bit, in order


def test_embed_many_runs_texts_at_once_on_several_threads(embeddings: Any, settings: Any) -> None:
    settings.POWERCONTEXT_EMBED_THREADS = 2
    both_running = threading.Barrier(2, timeout=WAIT)  # broken unless two runs overlap
    ran_on: set[str] = set()
    hooks: list[str] = []

    class Overlapping(embedding.Embedder):
        def __init__(self) -> None:  # no model: embed() is replaced
            self._lock = threading.Lock()
            self._pool = None

        def embed(self, text: str) -> Any:
            ran_on.add(threading.current_thread().name)
            both_running.wait()
            return np.full(3, float(len(text)), dtype=np.float32)

    vectors = Overlapping().embed_many(["ab", "abcd"], before_each=lambda: hooks.append("hook"))

    assert [float(v[0]) for v in vectors] == [2.0, 4.0]
    assert len(ran_on) == 2 and all(name.startswith("powercontext-embed") for name in ran_on)
    assert hooks == ["hook", "hook"]  # before each model run


def test_the_embedder_uses_the_cores_unless_told(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    settings.POWERCONTEXT_EMBED_THREADS = 0
    assert embedding.embed_threads() == 3
    settings.POWERCONTEXT_EMBED_THREADS = 1
    assert embedding.embed_threads() == 1


@pytest.mark.django_db
def test_every_pending_entry_is_embedded_exactly_once(
    embeddings: Any, async_writes: None, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.POWERCONTEXT_EMBED_THREADS = 2
    monkeypatch.setattr(pending, "BATCH", 4)
    monkeypatch.setattr(maintenance, "_dispatch", lambda scope_id: None)
    texts = [f"{TEXTS[i % len(TEXTS)]} (note {i})" for i in range(11)]
    for text in texts:
        make_memory("once", text)
    runs: Counter[str] = Counter()
    real_embed = embeddings.embed

    def counting(text: str) -> Any:
        runs[text] += 1
        return real_embed(text)

    monkeypatch.setattr(embeddings, "embed", counting)

    run = pending.embed_pending("once", until_done=True)

    assert run == pending.EmbedRun(written=11, remaining=False)
    assert runs == Counter(texts)  # each text through the model once
    stored = MemoryEntryVector.objects.filter(scope_id="once")
    assert stored.count() == 11
    assert sorted(stored.values_list("entry_version__text", flat=True)) == sorted(texts)


@pytest.mark.django_db(transaction=True)
def test_a_write_during_a_catch_up_is_not_held_up_and_is_embedded_too(
    embeddings: Any, async_writes: None, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.POWERCONTEXT_EMBED_THREADS = 2
    with monkeypatch.context() as quiet:
        quiet.setattr(maintenance, "_dispatch", lambda scope_id: None)
        for i in range(6):
            make_memory("during", f"{TEXTS[i % len(TEXTS)]} (before {i})")
    model_running = threading.Event()
    written = threading.Event()
    runs: Counter[str] = Counter()
    real_embed = embeddings.embed

    def held_until_the_write(text: str) -> Any:
        runs[text] += 1
        model_running.set()
        if not written.wait(WAIT):  # the model run stays in progress until the write is done
            raise AssertionError("the write did not finish while the embedder was busy")
        return real_embed(text)

    monkeypatch.setattr(embeddings, "embed", held_until_the_write)
    worker = pending.worker()
    worker.submit("during")
    assert model_running.wait(WAIT)

    late = make_memory("during", "a note written while the embedder catches up")  # commits now
    written.set()

    assert late.entry is not None
    assert pending.wait_until_embedded("during", timeout=WAIT)
    assert MemoryEntryVector.objects.filter(scope_id="during").count() == 7
    assert MemoryEntryVector.objects.filter(
        entry_version__entry_version_id=late.entry.entry_version_id
    ).exists()
    assert set(runs.values()) == {1} and len(runs) == 7


class _LockNotAvailable(Exception):
    sqlstate = "55P03"


def _lock_timeout() -> OperationalError:
    try:
        raise OperationalError("canceling statement due to lock timeout") from _LockNotAvailable()
    except OperationalError as exc:
        return exc


@pytest.mark.django_db
def test_a_write_that_times_out_on_a_writers_lock_is_tried_again_with_the_same_vectors(
    embeddings: Any, async_writes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintenance, "_dispatch", lambda scope_id: None)
    for text in TEXTS[:3]:
        make_memory("locked", text)
    runs: Counter[str] = Counter()
    real_embed, real_write = embeddings.embed, vector_index._write_vectors
    attempts: list[int] = []

    def counting(text: str) -> Any:
        runs[text] += 1
        return real_embed(text)

    def busy_twice(*args: Any) -> int:
        attempts.append(1)
        if len(attempts) <= 2:  # a bulk writer still holds the head
            raise _lock_timeout()
        return real_write(*args)

    monkeypatch.setattr(embeddings, "embed", counting)
    monkeypatch.setattr(vector_index, "_write_vectors", busy_twice)

    assert pending.embed_pending("locked", until_done=True).written == 3
    assert len(attempts) == 3 and runs == Counter(TEXTS[:3])  # the model ran once per text


@pytest.mark.django_db
def test_other_database_errors_of_the_write_are_not_retried(
    embeddings: Any, async_writes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintenance, "_dispatch", lambda scope_id: None)
    make_memory("broken", TEXTS[0])
    attempts: list[int] = []

    def failing(*args: Any) -> int:
        attempts.append(1)
        raise OperationalError("disk I/O error")

    monkeypatch.setattr(vector_index, "_write_vectors", failing)

    with pytest.raises(OperationalError):
        pending.embed_pending("broken")
    assert attempts == [1]
    assert vector_index.lock_timed_out(_lock_timeout()) is True


# -- /health/detail: the embedder's pace and ETA ---------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    fake = Clock()
    monkeypatch.setattr(operator.time, "monotonic", fake.monotonic)
    operator.forget_readings()
    operator.forget_last_known()
    yield fake
    operator.forget_readings()
    operator.forget_last_known()


def _detail() -> dict[str, Any]:
    response = Client().get("/health/detail", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.django_db
def test_health_detail_reports_the_embedders_pace_and_eta(
    embeddings: Any, async_writes: None, settings: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.POWERCONTEXT_OPERATOR_TOKEN = TOKEN
    monkeypatch.setattr(maintenance, "_dispatch", lambda scope_id: None)
    for i in range(5):
        make_memory("pace-scope", f"{TEXTS[i]} (pace {i})")
    # One vector first: the readings are the largest vector ids, and PostgreSQL's sequences
    # go on from earlier tests while the tables are empty.
    monkeypatch.setattr(pending, "BATCH", 1)
    pending.embed_pending("pace-scope")
    monkeypatch.setattr(pending, "BATCH", 2)

    first = _detail()
    pending.embed_pending("pace-scope")  # two of the four
    clock.now += 10
    second = _detail()
    clock.now += 0.5  # too soon for a reading of its own: measured from the first
    third = _detail()
    pending.embed_pending("pace-scope")  # the rest
    clock.now += 9.5
    done = _detail()

    assert first["embed_backlog"] == 4 and first["embed_vectors_stored"] > 0
    assert first["embed_rate_per_second"] is None and first["embed_eta_seconds"] is None
    assert second["embed_vectors_stored"] - first["embed_vectors_stored"] == 2
    assert second["embed_backlog"] == 2
    assert second["embed_rate_per_second"] == pytest.approx(0.2)
    assert second["embed_eta_seconds"] == pytest.approx(10.0)
    assert third["embed_rate_per_second"] == pytest.approx(2 / 10.5, abs=0.01)
    assert done["embed_backlog"] == 0 and done["embed_eta_seconds"] == 0.0
    assert done["embed_rate_per_second"] == pytest.approx(0.2)  # 4 vectors over 20 s
    assert "pace-scope" not in str(done)  # counts only


def test_the_eta_is_unknown_while_nothing_is_stored_and_readings_expire(clock: Clock) -> None:
    assert operator.embed_progress(backlog=5, stored=100, now=clock.now) == (None, None)
    assert operator.embed_progress(backlog=5, stored=100, now=clock.now + 30) == (0.0, None)  # stalled
    rate, eta = operator.embed_progress(backlog=5, stored=130, now=clock.now + 60)
    assert rate == pytest.approx(0.5) and eta == pytest.approx(10.0)
    # Readings older than the window are dropped: the rate is measured over the last ones.
    later = clock.now + 60 + operator.RATE_WINDOW_SECONDS
    rate, eta = operator.embed_progress(backlog=0, stored=130, now=later)
    assert rate == 0.0 and eta == 0.0
