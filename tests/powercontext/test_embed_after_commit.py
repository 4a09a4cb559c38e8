"""Embedding after commit (``POWERCONTEXT_EMBED_WRITES=async``): writers insert no vector, the
embedder fills the gap from the database, search sees entries by full text at once and by vector
once embedded, and concurrent or crashed embedders lose nothing. Runs on both databases; the
tests drive the embedder synchronously (``embed_pending``) or wait on its thread's condition."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from powercontext import search
from powercontext.core import broker
from powercontext.core.models import MemoryEntryVector
from powercontext.memory import services as memory_services
from powercontext.search import maintenance, tasks
from powercontext.search.vectors import embedding, pending
from tests.powercontext.factories import citation_of, make_memory
from tests.powercontext.test_concurrency import run_together

PAINTING = "Ann painted a sunrise over the lake"
FILLER = [
    "the weather was mild and sunny",
    "lunch is served at noon",
    "the office plants need water",
    "a meeting about the budget",
]
SCULPTURE = "Bob carved a marble statue of a horse"
# Shares no word (and no stem) with SCULPTURE: only the vector ranking can find it.
SCULPTURE_PARAPHRASE = "stone sculpture showing an animal"


@pytest.fixture
def async_writes(settings: Any) -> None:
    settings.POWERCONTEXT_EMBED_WRITES = "async"


def vector_count(scope_id: str) -> int:
    return MemoryEntryVector.objects.filter(scope_id=scope_id).count()


def has_vector(mutation: memory_services.MemoryMutation) -> bool:
    assert mutation.entry is not None
    return MemoryEntryVector.objects.filter(
        entry_version__entry_version_id=mutation.entry.entry_version_id
    ).exists()


@pytest.mark.django_db
def test_an_async_write_inserts_no_vector_and_signals_after_commit(
    embeddings: Any, async_writes: None, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        make_memory("a", PAINTING)

    assert vector_count("a") == 0
    assert len(callbacks) == 1
    assert search.missing_vectors("a", 10) != []

    run = pending.embed_pending("a", until_done=True)

    assert run == pending.EmbedRun(written=1, remaining=False)
    assert vector_count("a") == 1 and search.missing_vectors("a", 10) == []


@pytest.mark.django_db
def test_sync_mode_still_embeds_in_the_writers_transaction(embeddings: Any) -> None:
    mutation = make_memory("s", PAINTING)

    assert has_vector(mutation)


@pytest.mark.django_db
def test_an_async_remember_never_loads_the_model_and_succeeds_without_it(async_writes: None) -> None:
    mutation = make_memory("nomodel", PAINTING)

    assert mutation.entry is not None
    assert "model" not in embedding._state  # the write path never tried to load it
    assert pending.embed_pending("nomodel", until_done=True) == pending.EmbedRun(0, remaining=False)
    assert vector_count("nomodel") == 0
    assert search.search_memory("nomodel", "painted", 5)[0].text == PAINTING


@pytest.mark.django_db
def test_full_text_sees_a_new_entry_at_once_and_hybrid_once_it_is_embedded(
    embeddings: Any, async_writes: None
) -> None:
    for text in [PAINTING, *FILLER]:
        make_memory("h", text)
    pending.embed_pending("h", until_done=True)
    # Cache the scope's matrix, then add an entry the embedder has not seen yet.
    assert search.vector_search_memory("h", SCULPTURE_PARAPHRASE, 3)
    make_memory("h", SCULPTURE)

    assert [row.text for row in search.search_memory("h", "marble statue", 5)] == [SCULPTURE]
    assert SCULPTURE not in [row.text for row in search.vector_search_memory("h", SCULPTURE_PARAPHRASE, 6)]

    pending.embed_pending("h", until_done=True)

    assert search.vector_search_memory("h", SCULPTURE_PARAPHRASE, 1)[0].text == SCULPTURE
    fused = search.search_memory_mode("h", "marble statue", 3, "hybrid")[1]
    assert fused[0].text == SCULPTURE and fused[0].matched_by == ("fts", "vector")


@pytest.mark.django_db
def test_an_entry_retired_before_the_embedder_ran_gets_no_vector(embeddings: Any, async_writes: None) -> None:
    kept = make_memory("r", PAINTING)
    gone = make_memory("r", SCULPTURE)
    memory_services.memory_retire(scope_id="r", citation=citation_of(gone, at=gone.revision))
    revised = memory_services.memory_revise(
        scope_id="r",
        citation=citation_of(kept, at=gone.revision + 1),
        kind="note",
        text=PAINTING + " at dawn",
    )

    pending.embed_pending("r", until_done=True)

    assert not has_vector(gone) and not has_vector(kept) and has_vector(revised)
    assert vector_count("r") == 1
    report = search.verify_index(scope_id="r")
    assert report.ok and report.vectors_pending == 0 and report.vectors_extra == 0


@pytest.mark.django_db
def test_an_entry_retired_while_its_vector_is_computed_gets_none(
    embeddings: Any, async_writes: None, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.POWERCONTEXT_EMBED_THREADS = 1  # the model runs on this thread: the test's connection
    victim = make_memory("race", SCULPTURE)
    survivor = make_memory("race", PAINTING)
    real_embed = embeddings.embed
    retired: list[bool] = []

    def embed_and_retire(text: str) -> Any:
        if not retired:  # the writer commits between the model run and the embedder's write
            retired.append(True)
            memory_services.memory_retire(scope_id="race", citation=citation_of(victim, at=survivor.revision))
        return real_embed(text)

    monkeypatch.setattr(embeddings, "embed", embed_and_retire)
    pending.embed_pending("race", until_done=True)

    assert retired and not has_vector(victim) and has_vector(survivor)
    assert search.verify_index(scope_id="race").ok


@pytest.mark.django_db
def test_verify_reports_the_gap_as_pending_in_async_mode_and_repair_fills_it(
    embeddings: Any, settings: Any
) -> None:
    settings.POWERCONTEXT_EMBED_WRITES = "async"
    for text in [PAINTING, *FILLER]:
        make_memory("v", text)

    report = search.verify_index(scope_id="v")
    assert report.ok
    assert (report.vectors_pending, report.vectors_missing) == (5, 0)
    assert report.as_dict()["vectors"]["pending"] == 5

    settings.POWERCONTEXT_EMBED_WRITES = "sync"  # the same gap is damage when writers embed
    assert not search.verify_index(scope_id="v").ok

    settings.POWERCONTEXT_EMBED_WRITES = "async"
    repaired = search.verify_index(scope_id="v", repair=True)
    assert repaired.repaired and vector_count("v") == 5
    after = search.verify_index(scope_id="v")
    assert after.ok and after.vectors_pending == 0


@pytest.mark.django_db
def test_the_task_embeds_in_bounded_runs_and_enqueues_itself_while_a_gap_remains(
    embeddings: Any, async_writes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pending, "BATCH", 2)
    monkeypatch.setattr(pending, "TASK_BATCHES", 1)
    for text in [PAINTING, *FILLER]:
        make_memory("t", text)
    runs: list[Any] = []
    real = pending.embed_pending

    def counted(scope_id: str, **options: Any) -> Any:
        runs.append(real(scope_id, **options))
        return runs[-1]

    monkeypatch.setattr(pending, "embed_pending", counted)

    result = tasks.embed_pending.delay("t").get()  # eager here: the re-enqueued runs nest

    assert [run.written for run in runs] == [2, 2, 1]
    assert result == {"embedded": 2, "remaining": True}
    assert vector_count("t") == 5
    assert tasks.embed_pending_sweep.delay().get() == {"scopes": 0}


@pytest.mark.django_db
def test_the_sweep_enqueues_each_scope_with_a_gap(embeddings: Any, async_writes: None) -> None:
    make_memory("s1", PAINTING)
    make_memory("s2", SCULPTURE)

    assert search.scopes_missing_vectors() == ["s1", "s2"]
    assert tasks.embed_pending_sweep.delay().get() == {"scopes": 2}
    assert search.scopes_missing_vectors() == []


def test_service_mode_signals_coalesce_into_one_task_per_scope_sent_without_countdown(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.POWERCONTEXT_EMBED_COALESCE_SECONDS = 3600
    sent: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(
        tasks.embed_pending, "apply_async", lambda args, **options: sent.append((args, options))
    )
    monkeypatch.setattr(maintenance, "_sent", {})
    broker.reset()

    for _ in range(50):
        maintenance._dispatch("busy-scope")
    maintenance._dispatch("other-scope")

    assert [args for args, _ in sent] == [("busy-scope",), ("other-scope",)]
    for _, options in sent:
        # Sent now, never retried, no result: a worker never holds it unacknowledged for a
        # countdown, and the request never waits on the broker.
        assert "countdown" not in options and "eta" not in options
        assert options["retry"] is False and options["ignore_result"] is True


def test_a_failing_signal_is_logged_without_text_and_never_raises(
    settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False
    calls: list[Any] = []

    def broken(args: Any, **options: Any) -> None:
        calls.append(args)
        raise ConnectionError("broker at secret-host said no")

    monkeypatch.setattr(tasks.embed_pending, "apply_async", broken)
    monkeypatch.setattr(maintenance, "_sent", {})
    broker.reset()

    maintenance._dispatch("private-scope")
    maintenance._dispatch("another-private-scope")  # within the back-off: not even tried

    assert len(calls) == 1
    assert caplog.text.count("broker publish failed error_class=ConnectionError") == 1
    assert "private-scope" not in caplog.text and "secret-host" not in caplog.text
    broker.reset()


def test_a_publish_to_a_closed_broker_port_fails_in_milliseconds(settings: Any) -> None:
    import socket
    import time

    from powercontext.celery import app

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    original = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{port}/0"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    broker.reset()
    try:
        started = time.perf_counter()
        assert broker.publish(tasks.embed_pending, ("s",)) is False
        elapsed = time.perf_counter() - started
    finally:
        app.conf.broker_url = original
        broker.reset()
    # kombu's and redis-py's own reconnect loops would take ~2 s here.
    assert elapsed < 0.5


# -- the embedded default's thread (real commits, so the thread sees them) -----------------------


@pytest.mark.django_db(transaction=True)
def test_the_thread_embeds_after_commit_and_wait_until_embedded_returns(
    embeddings: Any, async_writes: None
) -> None:
    for text in [PAINTING, *FILLER]:
        make_memory("thread", text)

    assert pending.wait_until_embedded("thread", timeout=120)
    assert vector_count("thread") == 5
    assert search.vector_search_memory("thread", "artwork of the morning sky", 1)[0].text == PAINTING


@pytest.mark.django_db(transaction=True)
def test_gaps_left_by_a_dead_process_are_filled_when_the_next_thread_starts(
    embeddings: Any, async_writes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as lost:
        lost.setattr(maintenance, "_dispatch", lambda scope_id: None)  # the signals died with it
        for text in [PAINTING, *FILLER]:
            make_memory("crashed", text)
    assert vector_count("crashed") == 0

    assert pending.worker().wait_idle("crashed", timeout=120)  # no signal: the start-up sweep

    assert vector_count("crashed") == 5


@pytest.mark.django_db(transaction=True)
def test_an_embedder_failure_is_logged_by_class_and_the_thread_carries_on(
    embeddings: Any, async_writes: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = pending.embed_pending
    failures: list[str] = []

    def fail_once(scope_id: str, **options: Any) -> Any:
        if not failures:
            failures.append(scope_id)
            raise RuntimeError(f"cannot embed {PAINTING}")
        return real(scope_id, **options)

    monkeypatch.setattr(pending, "embed_pending", fail_once)
    make_memory("flaky", PAINTING)

    assert pending.wait_until_embedded("flaky", timeout=120)
    assert failures == ["flaky"] and vector_count("flaky") == 1
    assert "embedder failed error_class=RuntimeError" in caplog.text and PAINTING not in caplog.text


# -- two embedders at once (PostgreSQL: real row locks and ON CONFLICT) --------------------------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_embedders_neither_fail_nor_duplicate(
    embeddings: Any, async_writes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as quiet:
        quiet.setattr(maintenance, "_dispatch", lambda scope_id: None)
        for i in range(40):
            make_memory("both", f"{FILLER[i % len(FILLER)]} (note {i})")
    monkeypatch.setattr(pending, "BATCH", 8)

    runs = run_together([lambda: pending.embed_pending("both", until_done=True) for _ in range(4)])

    assert [r for r in runs if isinstance(r, BaseException)] == []
    assert sum(run.written for run in runs) == 40
    assert vector_count("both") == 40
    assert search.verify_index(scope_id="both").ok
    connections.close_all()


@pytest.mark.django_db
def test_the_gap_is_found_without_reading_the_versions_that_have_their_vectors(
    embeddings: Any, async_writes: None
) -> None:
    """The embedder looks for the gap after every write: it must cost the gap's rows, not read
    every active version of the scope (text included) to keep the few without a vector
    (~0.55 s a call at 100,000 entries on PostgreSQL, docs/benchmarks.md). Oldest first, each
    with its scope and text; another scope's gap is not this one's."""
    for text in FILLER:
        make_memory("g", text)
    pending.embed_pending("g", until_done=True)
    make_memory("g", PAINTING)
    make_memory("g", SCULPTURE)
    make_memory("other", SCULPTURE_PARAPHRASE)

    with CaptureQueriesContext(connections["default"]) as queries:
        work = search.missing_vectors("g", 10)

    assert [(item.scope_id, item.text, item.experience) for item in work] == [
        ("g", PAINTING, False),
        ("g", SCULPTURE, False),
    ]
    assert work[0].pk < work[1].pk
    joined = [
        q["sql"]
        for q in queries
        if "powercontext_memorymembership" in q["sql"] and "powercontext_memoryentryversion" in q["sql"]
    ]
    assert joined == [], joined
    assert search.missing_vectors("g", 1) == work[:1]
    assert [item.text for item in search.missing_vectors(None, 10)] == [
        PAINTING,
        SCULPTURE,
        SCULPTURE_PARAPHRASE,
    ]
