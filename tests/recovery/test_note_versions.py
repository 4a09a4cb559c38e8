"""Note versions are bounded (issue 33): a note keeps its newest
``POWERCONTEXT_RECOVERY_NOTE_VERSIONS`` versions, the write that makes a newer one deletes the
older ones in its own transaction, and the sizes the API reports are what the database holds."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone

from powercontext.recovery import limits
from powercontext.recovery.models import RecoverySession, SessionNote, SessionNoteVersion
from tests.api.helpers import assert_error
from tests.recovery.helpers import call, ok

SCOPE, SESSION = "git:example/app", "versions-session"
migration = importlib.import_module("powercontext.recovery.migrations.0003_note_versions_bounded")


def write(api: Any, path: str, content: str, **extra: Any) -> dict[str, Any]:
    return ok(api, "write", SCOPE, SESSION, path=path, content=content, **extra)


def kept(path: str) -> list[tuple[int, int]]:
    """(version, UTF-8 bytes of its content) of every version row the database holds for the note."""
    rows = SessionNoteVersion.objects.filter(note__path=path).order_by("version")
    return [
        (version, len(content.encode("utf-8"))) for version, content in rows.values_list("version", "content")
    ]


def sqlite_used_bytes() -> int:
    """Bytes of the SQLite database's pages in use (free pages excluded), as this connection sees it."""
    with connection.cursor() as cursor:
        values = []
        for pragma in ("page_count", "freelist_count", "page_size"):
            cursor.execute(f"PRAGMA {pragma}")
            values.append(cursor.fetchone()[0])
    page_count, free, page_size = values
    return (page_count - free) * page_size


def test_the_setting_defaults_to_a_small_bound(settings: Any) -> None:
    assert settings.POWERCONTEXT_RECOVERY_NOTE_VERSIONS == 5


def test_a_note_keeps_its_newest_versions_and_reports_what_they_take(api: Any, settings: Any) -> None:
    settings.POWERCONTEXT_RECOVERY_NOTE_VERSIONS = 3
    written = [write(api, "plan.md", "x" * n) for n in (10, 20, 30, 40)]
    appended = write(api, "plan.md", "y" * 5, mode="append")  # v5: 45 bytes, from the kept v4

    assert [w["note"]["oldest_version"] for w in [*written, appended]] == [1, 1, 1, 2, 3]
    assert [w["note"]["stored_bytes"] for w in [*written, appended]] == [10, 30, 60, 90, 115]
    assert kept("plan.md") == [(3, 30), (4, 40), (5, 45)]
    assert (appended["total_bytes"], appended["stored_bytes"]) == (45, 115)
    for pruned in (1, 2):
        response = call(api, "read", SCOPE, SESSION, path="plan.md", version=pruned)
        details = assert_error(response, 404, "note_not_found")
        assert details == {"latest_version": 5, "oldest_version": 3}
    third = ok(api, "read", SCOPE, SESSION, path="plan.md", version=3)
    assert (third["content"], third["oldest_version"], third["latest_version"]) == ("x" * 30, 3, 5)

    write(api, "log.md", "abc")
    listed = ok(api, "list", SCOPE, SESSION)
    assert [(n["path"], n["version"], n["oldest_version"], n["stored_bytes"]) for n in listed["notes"]] == [
        ("log.md", 1, 1, 3),
        ("plan.md", 5, 3, 115),
    ]
    assert (listed["total_bytes"], listed["stored_bytes"]) == (48, 118)
    session = RecoverySession.objects.get()
    assert (session.total_bytes, session.stored_bytes) == (48, 118)


def test_a_lower_bound_prunes_at_the_next_write_and_a_higher_one_keeps_what_is_left(
    api: Any, settings: Any
) -> None:
    for n in range(1, 7):
        write(api, "plan.md", str(n))
    assert [v for v, _ in kept("plan.md")] == [2, 3, 4, 5, 6]

    settings.POWERCONTEXT_RECOVERY_NOTE_VERSIONS = 1
    only = write(api, "plan.md", "seven")
    assert kept("plan.md") == [(7, 5)]
    assert (only["note"]["oldest_version"], only["note"]["stored_bytes"], only["stored_bytes"]) == (7, 5, 5)

    settings.POWERCONTEXT_RECOVERY_NOTE_VERSIONS = 4
    more = write(api, "plan.md", "eight")
    assert [v for v, _ in kept("plan.md")] == [7, 8]
    assert (more["note"]["oldest_version"], more["note"]["stored_bytes"]) == (7, 10)


def test_a_refused_write_prunes_nothing(api: Any, settings: Any) -> None:
    settings.POWERCONTEXT_RECOVERY_NOTE_VERSIONS = 2
    write(api, "plan.md", "a")
    write(api, "plan.md", "b")
    too_large = "x" * limits.NOTE_MAX_BYTES

    assert_error(
        call(api, "write", SCOPE, SESSION, path="plan.md", content=too_large, mode="append"),
        422,
        "note_too_large",
    )
    assert_error(
        call(api, "write", SCOPE, SESSION, path="plan.md", content="c", expected_version=1),
        409,
        "note_conflict",
    )

    assert kept("plan.md") == [(1, 1), (2, 1)]
    assert SessionNote.objects.get().stored_bytes == 2


def test_three_hundred_rewrites_leave_the_database_within_twice_the_reported_size(api: Any) -> None:
    """The review's reproduction: 300 replace-writes of one 64 KiB note. Every version row the
    database holds is counted; on SQLite also every page in use (free pages are reused)."""
    write(api, "warmup.md", "w")  # the session's and the tables' first pages, before measuring
    sqlite = connection.vendor == "sqlite"
    before = sqlite_used_bytes() if sqlite else 0
    last: dict[str, Any] = {}
    for n in range(300):
        content = (f"{n:03d}" + "abcdefghijklmnopqrstuvwxyz" * 2600)[: limits.NOTE_MAX_BYTES]
        last = write(api, "plan.md", content)

    reported = last["note"]["stored_bytes"]
    assert last["note"]["version"] == 300 and last["note"]["size_bytes"] == limits.NOTE_MAX_BYTES
    assert reported == 5 * limits.NOTE_MAX_BYTES
    assert last["stored_bytes"] == reported + 1  # plus warmup.md
    held = kept("plan.md")
    assert [version for version, _ in held] == [296, 297, 298, 299, 300]
    assert sum(size for _, size in held) == reported
    assert sum(size for _, size in held) <= 2 * reported
    if sqlite:
        grown = sqlite_used_bytes() - before
        assert grown <= 2 * reported, (grown, reported)


@pytest.mark.django_db
def test_the_migration_bounds_existing_notes_and_fills_the_sizes(settings: Any) -> None:
    """Notes written before the bound kept every version: the migration prunes them to the
    setting and fills ``oldest_version`` / ``stored_bytes`` from what is left."""
    settings.POWERCONTEXT_RECOVERY_NOTE_VERSIONS = 2
    now = timezone.now()
    session = RecoverySession.objects.create(scope_id=SCOPE, session_id=SESSION, note_count=2, total_bytes=7)
    long = SessionNote.objects.create(
        session=session, path="plan.md", current_version=4, size_bytes=4, updated_at=now
    )
    short = SessionNote.objects.create(
        session=session, path="log.md", current_version=1, size_bytes=3, updated_at=now
    )
    for version in range(1, 5):
        SessionNoteVersion.objects.create(
            note=long,
            version=version,
            mode="replace",
            content="x" * version,
            size_bytes=version,
            created_at=now,
        )
    SessionNoteVersion.objects.create(
        note=short, version=1, mode="replace", content="abc", size_bytes=3, created_at=now
    )

    migration.bound_and_backfill(apps, SimpleNamespace(connection=connection))

    assert kept("plan.md") == [(3, 3), (4, 4)] and kept("log.md") == [(1, 3)]
    long.refresh_from_db()
    short.refresh_from_db()
    session.refresh_from_db()
    assert (long.oldest_version, long.stored_bytes) == (3, 7)
    assert (short.oldest_version, short.stored_bytes) == (1, 3)
    assert (session.total_bytes, session.stored_bytes) == (7, 10)
