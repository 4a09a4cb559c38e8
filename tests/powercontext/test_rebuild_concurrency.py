"""``rebuild_search_index`` beside agents that write, and beside another rebuild: real threads,
real connections (PostgreSQL: separate sessions; SQLite: the IMMEDIATE write lock)."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections

from powercontext import search
from powercontext.core.models import MemorySearchDocument
from powercontext.memory import services as memory_services
from powercontext.memory.selectors import memory_list_entries
from powercontext.search import locking
from tests.powercontext.factories import citation_of, make_memory

SCOPES = ("busy-a", "busy-b")
_pace = threading.Event()  # never set: wait(t) is a bounded pause between polls or writes


def _seed() -> None:
    for scope in SCOPES:
        for i in range(150):
            make_memory(scope, f"seeded note {i} about the deploy ({scope})")


class Agents:
    """Threads writing through the memory services until stopped: adds, revisions, retirements,
    and a scope that only appears during the rebuild."""

    def __init__(self, count: int = 2, pause: float = 0.0) -> None:
        self.pause = pause
        self.stop = threading.Event()
        self.counts = [0] * count  # writes returned, per agent (each agent sets its own)
        self.errors: list[BaseException] = []
        self.acknowledged: list[tuple[str, str]] = []  # (scope, text) of every write that returned
        self.threads = [threading.Thread(target=self._run, args=(n,)) for n in range(count)]

    def _run(self, n: int) -> None:
        try:
            i = 0
            while not self.stop.is_set():
                # Each agent its own scope (no revision conflicts between agents), and now and
                # then a scope that did not exist when the rebuild listed the scopes.
                scope = SCOPES[n % len(SCOPES)] if i % 3 else f"fresh-{n}-{i}"
                text = f"agent {n} note {i} written during a rebuild"
                written = memory_services.memory_remember(scope_id=scope, kind="note", text=text)
                self.acknowledged.append((scope, text))
                if i % 4 == 3:  # a revision of the note just written, then it is retired
                    revised = memory_services.memory_revise(
                        scope_id=scope, citation=citation_of(written), kind="note", text=text + " (revised)"
                    )
                    self.acknowledged.remove((scope, text))
                    self.acknowledged.append((scope, text + " (revised)"))
                    if i % 8 == 7:
                        memory_services.memory_retire(scope_id=scope, citation=citation_of(revised))
                        self.acknowledged.remove((scope, text + " (revised)"))
                i += 1
                self.counts[n] = i
                _pace.wait(self.pause)
        except BaseException as exc:  # asserted by the test
            self.errors.append(exc)
        finally:
            connections.close_all()

    @property
    def writes(self) -> int:
        """Writes returned so far, all agents together (one shared counter set by each agent
        to its own count went backwards whenever the other agent was behind)."""
        return sum(self.counts)

    def __enter__(self) -> Agents:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)
            assert not thread.is_alive(), "an agent hung"


def _rebuild() -> str:
    out = io.StringIO()
    try:
        call_command("rebuild_search_index", "--no-progress", stdout=out, stderr=io.StringIO())
    finally:
        connections.close_all()
    return out.getvalue()


def _in_threads(work: list[Callable[[], Any]]) -> list[Any]:
    barrier = threading.Barrier(len(work))
    results: list[Any] = [None] * len(work)

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = work[index]()
        except BaseException as exc:  # asserted by the test
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
        assert not thread.is_alive(), "a rebuild hung"
    return results


def _wait_for_writes(agents: Agents, count: int) -> None:
    deadline = time.monotonic() + 60
    while agents.writes < count:
        assert not agents.errors, agents.errors
        assert time.monotonic() < deadline, "the agents stopped writing"
        _pace.wait(0.01)


def _totals_differences() -> list[tuple[Any, ...]]:
    """Each scope whose kept Memory totals differ from its index rows: (scope, kept, counted)."""
    from django.db import connection

    from powercontext.search.fulltext.indexes import TOTALS

    docs = MemorySearchDocument._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COALESCE(t.scope_id, d.scope_id), t.documents, t.total_length, d.n, d.total"
            f" FROM {TOTALS} t FULL JOIN (SELECT scope_id, count(*) AS n, sum(length) AS total"
            f" FROM {docs} GROUP BY scope_id) d ON d.scope_id = t.scope_id"
            " WHERE t.documents IS DISTINCT FROM d.n OR t.total_length IS DISTINCT FROM d.total"
        )
        return [row for row in cursor.fetchall() if row[1] or row[3]]


def _assert_index_complete(agents: Agents) -> None:
    report = search.verify_index()
    assert (report.missing, report.extra, report.mismatched) == (0, 0, 0), report.as_dict()
    assert report.engine == [], _totals_differences()  # the engine's structures too: postings, totals
    for scope in {scope for scope, _ in agents.acknowledged}:
        _, entries = memory_list_entries(scope_id=scope)
        texts = {entry.text for entry in entries}
        assert {text for s, text in agents.acknowledged if s == scope} <= texts  # nothing acknowledged lost
    indexed = set(MemorySearchDocument.objects.values_list("membership__entry_version__text", flat=True))
    assert {text for _, text in agents.acknowledged} <= indexed


@pytest.mark.django_db(transaction=True)
def test_a_rebuild_while_agents_write_succeeds_three_times_in_a_row() -> None:
    _seed()
    during = 0
    with Agents() as agents:
        for _ in range(3):
            _wait_for_writes(agents, agents.writes + 1)  # the agents are writing when it starts
            before = agents.writes
            written = _in_threads([_rebuild])[0]
            assert not isinstance(written, BaseException), repr(written)
            assert "rebuilt" in written
            during += agents.writes - before
        # A single rebuild may hold the SQLite write lock from the agents' last write to its end;
        # over three rebuilds the agents' writes really interleave with the rebuilding.
        assert during > 0
    assert agents.errors == []
    _assert_index_complete(agents)


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_rebuilds_both_succeed_while_agents_write() -> None:
    _seed()
    with Agents() as agents:
        results = _in_threads([_rebuild, _rebuild])
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert all("rebuilt" in r for r in results)
    assert agents.errors == []
    _assert_index_complete(agents)


@pytest.mark.django_db(transaction=True)
def test_a_second_rebuild_says_it_waits_for_the_one_running() -> None:
    _seed()
    holder_has_lock = threading.Event()
    release = threading.Event()

    def hold() -> None:
        try:
            with locking.maintenance_lock():
                holder_has_lock.set()
                release.wait(60)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holder_has_lock.wait(30)
        err = io.StringIO()
        out = io.StringIO()
        waiting = threading.Thread(
            target=lambda: (
                call_command("rebuild_search_index", "--no-progress", stdout=out, stderr=err),
                connections.close_all(),
            )
        )
        started = time.monotonic()
        waiting.start()
        deadline = started + 30
        while "another index rebuild or verify is running" not in err.getvalue():
            assert time.monotonic() < deadline, "the second rebuild never said it waits"
            _pace.wait(0.02)
        assert "rebuilt" not in out.getvalue()  # it waits: nothing rebuilt while the other runs
    finally:
        release.set()
        holder.join(timeout=60)
    waiting.join(timeout=120)
    assert not waiting.is_alive()
    assert "rebuilt" in out.getvalue()
