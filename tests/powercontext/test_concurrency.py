"""Concurrent writers: real threads, real connections, a Barrier to start them together."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, connections

from powercontext.core.exceptions import RevisionConflict
from powercontext.core.models import ArtifactRevision, MemoryMembership
from powercontext.memory import services as memory_services
from powercontext.memory.selectors import memory_head_revision, memory_list_entries
from tests.powercontext.factories import citation_of, make_memory


def run_together(workers: list[Callable[[], Any]]) -> list[Any]:
    """Start every worker at the same instant; return each one's result or raised exception."""
    barrier = threading.Barrier(len(workers))
    results: list[Any] = [None] * len(workers)

    def run(index: int, work: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = work()
        except BaseException as exc:  # collected and asserted by the test
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a writer hung"
    return results


def remember_worker(scope_id: str, text: str) -> Callable[[], Any]:
    return lambda: memory_services.memory_remember(scope_id=scope_id, kind="note", text=text)


@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_writers_each_get_their_own_revision_and_lose_nothing() -> None:
    results = run_together([remember_worker("busy", f"concurrent note {i}") for i in range(16)])

    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    assert sorted(r.revision for r in results) == list(range(1, 17))
    assert memory_head_revision(scope_id="busy") == 16
    revision, entries = memory_list_entries(scope_id="busy")
    assert revision == 16
    assert sorted(e.text for e in entries) == sorted(f"concurrent note {i}" for i in range(16))
    assert ArtifactRevision.objects.filter(scope_id="busy").count() == 16
    # Every revision's change list names exactly the one entry its writer added.
    added = [
        rev.content["changes"][0]["entry_id"] for rev in ArtifactRevision.objects.filter(scope_id="busy")
    ]
    assert sorted(added) == sorted(e.entry_id for e in entries)


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_writers_of_a_new_scope_create_one_memory_head() -> None:
    results = run_together([remember_worker(f"fresh-{n % 2}", f"first note {n}") for n in range(8)])

    assert [r for r in results if isinstance(r, BaseException)] == []
    assert memory_head_revision(scope_id="fresh-0") == 4
    assert memory_head_revision(scope_id="fresh-1") == 4


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_revisers_of_one_head_exactly_one_wins() -> None:
    citation = citation_of(make_memory("race", "the original text"))

    def revise(text: str) -> Callable[[], Any]:
        return lambda: memory_services.memory_revise(
            scope_id="race", citation=citation, kind="note", text=text
        )

    results = run_together([revise("first rewrite"), revise("second rewrite")])

    winners = [r for r in results if isinstance(r, memory_services.MemoryMutation)]
    losers = [r for r in results if isinstance(r, RevisionConflict)]
    assert len(winners) == 1 and len(losers) == 1, results
    assert memory_head_revision(scope_id="race") == 2
    _, entries = memory_list_entries(scope_id="race")
    assert [e.text for e in entries] == [winners[0].entry.text]
    assert MemoryMembership.objects.filter(scope_id="race", to_revision__isnull=True).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_retire_and_revise_of_one_entry_leave_one_consistent_winner() -> None:
    citation = citation_of(make_memory("mixed", "to be changed twice"))
    results = run_together(
        [
            lambda: memory_services.memory_retire(scope_id="mixed", citation=citation),
            lambda: memory_services.memory_revise(
                scope_id="mixed", citation=citation, kind="note", text="changed"
            ),
        ]
    )
    assert sum(isinstance(r, memory_services.MemoryMutation) for r in results) == 1
    assert sum(isinstance(r, RevisionConflict) for r in results) == 1
    assert memory_head_revision(scope_id="mixed") == 2
    assert MemoryMembership.objects.filter(scope_id="mixed", to_revision__isnull=True).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_http_writers_never_see_database_errors(live_server: Any) -> None:
    """Through the real server: SQLite serializes writers (IMMEDIATE + busy timeout)."""
    import httpx

    def post(i: int) -> Callable[[], Any]:
        return lambda: (
            httpx.post(
                f"{live_server.url}/v1/memory/remember",
                json={"scope_id": "http-busy", "kind": "note", "text": f"http note {i}"},
                timeout=60,
            ).status_code
        )

    statuses = run_together([post(i) for i in range(12)])
    assert statuses == [200] * 12
    assert memory_head_revision(scope_id="http-busy") == 12
    assert connection.vendor in {"sqlite", "postgresql"}
