"""Feedback under real concurrent writers (PostgreSQL: row locks, READ COMMITTED): every report
lands once, the counters count every reporter, and a rebuild beside writers loses nothing."""

from __future__ import annotations

import threading
from typing import Any
from unittest import mock

import pytest
from django.db import connection, connections
from django.test import Client

from powercontext.core.models import ApiToken
from powercontext.feedback import services
from powercontext.feedback.models import Feedback, FeedbackCounter
from powercontext.memory.services import memory_remember
from tests.conftest import Api
from tests.powercontext.test_concurrency import run_together
from tests.review.factories import make_user

SCOPE = "race-feedback"


def citation(mutation: Any) -> dict[str, Any]:
    return {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": mutation.revision},
        "entry_id": mutation.entry.entry_id,
        "entry_version_id": mutation.entry.entry_version_id,
    }


def tokens(count: int) -> list[ApiToken]:
    return [
        ApiToken.objects.create(user=make_user(f"agent-{n}"), digest=f"{n:064d}", prefix=f"p{n}")
        for n in range(count)
    ]


def record(cited: list[dict[str, Any]], outcome: str, token: ApiToken | None) -> Any:
    return lambda: services.feedback_record(
        scope_id=SCOPE, items=[services.FeedbackItem(c, outcome) for c in cited], token=token
    )


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_eight_reporters_at_once_are_eight_reporters() -> None:
    first = citation(memory_remember(scope_id=SCOPE, kind="note", text="The port is 6543."))
    second = citation(memory_remember(scope_id=SCOPE, kind="note", text="Deploys run on Fridays."))
    # Each writer reports both items, half of them in the opposite order: the locks are taken in
    # sorted order, so no two writers can deadlock.
    writers = [
        record([first, second] if n % 2 else [second, first], "outdated", token)
        for n, token in enumerate(tokens(8))
    ]

    results = run_together(writers)

    assert all(isinstance(result, list) for result in results), results
    assert Feedback.objects.count() == 16
    counters = {c.target: c for c in FeedbackCounter.objects.all()}
    assert {c.reporters for c in counters.values()} == {8}
    assert services.counters_verify(scope_id=SCOPE).ok


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_same_report_sent_twice_at_once_is_recorded_once() -> None:
    cited = citation(memory_remember(scope_id=SCOPE, kind="note", text="The port is 6543."))
    (token,) = tokens(1)

    results = run_together([record([cited], "used", token) for _ in range(4)])

    assert sorted(result[0].status for result in results) == [
        "already_recorded",
        "already_recorded",
        "already_recorded",
        "recorded",
    ], results
    assert FeedbackCounter.objects.get().uses == 1


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_rebuild_beside_writers_ends_with_the_logs_figures() -> None:
    cited = [
        citation(memory_remember(scope_id=SCOPE, kind="note", text=f"Fact number {n}.")) for n in range(4)
    ]
    writers: list[Any] = [record(cited, "used", token) for token in tokens(6)]
    writers.append(lambda: services.counters_rebuild(scope_id=SCOPE))

    results = run_together(writers)

    assert not [r for r in results if isinstance(r, BaseException)], results
    assert services.counters_verify(scope_id=SCOPE).ok
    assert {c.uses for c in FeedbackCounter.objects.all()} == {6}


def _blocked_on_a_lock() -> bool:
    """Whether another session of this database waits on a lock (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
        return bool(cursor.fetchone()[0])


class RebuildHeld:
    """A counter rebuild in a thread of its own, held right after it has read the log (and
    taken its locks) until ``release``; other work in named threads beside it. Each thread's
    result or exception lands in ``outcomes``."""

    def __init__(self) -> None:
        self.read, self.go = threading.Event(), threading.Event()
        self.outcomes: dict[str, Any] = {}
        self.threads: list[threading.Thread] = []
        self._real = services.expected_counters
        self._patch = mock.patch.object(services, "expected_counters", self._held_after_reading)

    def _held_after_reading(self, scope_id: str, targets: Any = None) -> Any:
        figures = self._real(scope_id, targets)
        if threading.current_thread().name == "rebuild":
            self.read.set()
            assert self.go.wait(timeout=30)
        return figures

    def run(self, name: str, work: Any) -> threading.Thread:
        def body() -> None:
            try:
                self.outcomes[name] = work()
            except BaseException as exc:  # asserted by the tests
                self.outcomes[name] = exc
            finally:
                connections.close_all()

        thread = threading.Thread(target=body, name=name)
        thread.start()
        self.threads.append(thread)
        return thread

    def __enter__(self) -> RebuildHeld:
        self._patch.start()
        self.run("rebuild", lambda: services.counters_rebuild(scope_id=SCOPE))
        assert self.read.wait(timeout=30)
        return self

    def release(self) -> None:
        self.go.set()
        for thread in self.threads:
            thread.join(timeout=60)
            assert not thread.is_alive(), "a writer hung"

    def __exit__(self, *exc: object) -> None:
        self.go.set()
        self._patch.stop()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_report_on_a_new_item_during_a_rebuild_keeps_its_counter() -> None:
    """The interleaving that lost rows: the rebuild reads the log, a report on an item the log
    did not hold yet commits, then the rebuild deletes the rows its read did not name. The
    rebuild is held after its read until the report has either committed or is waiting for it."""
    old, new = (
        citation(memory_remember(scope_id=SCOPE, kind="note", text=text))
        for text in ("The port is 6543.", "Deploys run on Fridays.")
    )
    first, second = tokens(2)
    services.feedback_record(scope_id=SCOPE, items=[services.FeedbackItem(old, "used")], token=first)

    with RebuildHeld() as held:
        report = held.run(
            "report",
            lambda: services.feedback_record(
                scope_id=SCOPE, items=[services.FeedbackItem(new, "used")], token=second
            ),
        )
        while report.is_alive() and not _blocked_on_a_lock():
            report.join(timeout=0.02)
        held.release()

    assert not [r for r in held.outcomes.values() if isinstance(r, BaseException)], held.outcomes
    assert services.counters_verify(scope_id=SCOPE).ok
    assert sorted(FeedbackCounter.objects.values_list("uses", flat=True)) == [1, 1]


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_report_held_by_a_rebuild_past_the_lock_timeout_is_a_503_and_writes_nothing() -> None:
    cited = citation(memory_remember(scope_id=SCOPE, kind="note", text="The port is 6543."))
    api = Api(Client())
    body = {"scope_id": SCOPE, "items": [{"citation": cited, "outcome": "used"}]}
    with connection.cursor() as cursor:  # this session only (the test client's requests)
        cursor.execute("SET lock_timeout = 200")

    with RebuildHeld() as held:
        refused = api.post("/v1/context/feedback", body)
        held.release()

    assert refused.status_code == 503, refused.content
    assert refused.json()["error"]["code"] == "runtime_not_ready"
    assert "Retry-After" in refused.headers
    assert not Feedback.objects.exists()
    assert api.post("/v1/context/feedback", body).status_code == 200
    assert services.counters_verify(scope_id=SCOPE).ok
