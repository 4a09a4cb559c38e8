"""Concurrent appends to one note from several writers lose nothing (real threads and connections
started together by a Barrier). On PostgreSQL the session row lock serializes the writers; the
same test on SQLite exercises the IMMEDIATE write lock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from powercontext.recovery import limits, selectors, services
from powercontext.recovery.exceptions import SessionNotesTooLarge
from powercontext.recovery.models import RecoverySession, SessionNote, SessionNoteVersion
from tests.powercontext.test_concurrency import run_together

SCOPE, SESSION = "busy", "run-1"


def append(line: str) -> Callable[[], Any]:
    return lambda: services.note_write(
        scope_id=SCOPE, session_id=SESSION, owner="local", path="log.md", content=line + "\n", mode="append"
    )


def _check_no_line_lost(writers: int, per_writer: int) -> None:
    def worker(w: int) -> Callable[[], Any]:
        def run() -> list[int]:
            return [append(f"writer {w} line {i}")().version for i in range(per_writer)]

        return run

    results = run_together([worker(w) for w in range(writers)])
    assert [r for r in results if isinstance(r, BaseException)] == []
    versions = sorted(v for r in results for v in r)
    assert versions == list(range(1, writers * per_writer + 1))  # every write its own version
    note = selectors.note_read(scope_id=SCOPE, session_id=SESSION, owner="local", path="log.md")
    lines = note.content.splitlines()
    assert sorted(lines) == sorted(f"writer {w} line {i}" for w in range(writers) for i in range(per_writer))
    for w in range(writers):  # each writer's lines stay in its own order
        mine = [line for line in lines if line.startswith(f"writer {w} ")]
        assert mine == [f"writer {w} line {i}" for i in range(per_writer)]
    head = SessionNote.objects.get()
    assert head.current_version == writers * per_writer
    session = RecoverySession.objects.get()
    assert (session.note_count, session.total_bytes) == (1, len(note.content.encode("utf-8")))
    # Every writer pruned inside its own locked write: the newest versions are kept, and the
    # bytes reported are the bytes held.
    kept = list(SessionNoteVersion.objects.order_by("version").values_list("version", "size_bytes"))
    assert [v for v, _ in kept] == list(range(writers * per_writer - 4, writers * per_writer + 1))
    assert head.oldest_version == kept[0][0]
    assert head.stored_bytes == session.stored_bytes == sum(size for _, size in kept)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_clients_appending_to_one_note_lose_nothing_on_postgresql() -> None:
    _check_no_line_lost(writers=2, per_writer=25)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_eight_first_writers_of_a_new_session_create_one_session_row() -> None:
    results = run_together([append(f"first {i}") for i in range(8)])
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert RecoverySession.objects.count() == 1
    assert SessionNote.objects.get().current_version == 8
    kept = SessionNoteVersion.objects.order_by("version").values_list("version", flat=True)
    assert list(kept) == [4, 5, 6, 7, 8]  # the newest POWERCONTEXT_RECOVERY_NOTE_VERSIONS (5) of 8


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_cannot_overrun_the_session_cap() -> None:
    per_note = limits.NOTE_MAX_BYTES
    fit = limits.SESSION_MAX_BYTES // per_note

    def writer(i: int) -> Callable[[], Any]:
        return lambda: services.note_write(
            scope_id=SCOPE, session_id=SESSION, owner="local", path=f"n{i}", content="x" * per_note
        )

    results = run_together([writer(i) for i in range(fit + 2)])
    refused = [r for r in results if isinstance(r, SessionNotesTooLarge)]
    assert len(refused) == 2 and len([r for r in results if not isinstance(r, BaseException)]) == fit
    assert RecoverySession.objects.get().total_bytes == limits.SESSION_MAX_BYTES
    assert SessionNote.objects.count() == fit and SessionNoteVersion.objects.count() == fit


@pytest.mark.django_db(transaction=True)
def test_two_clients_appending_to_one_note_lose_nothing() -> None:
    _check_no_line_lost(writers=2, per_writer=10)
