"""Session recovery reads: notes (list, read, literal search) and the recovery hint. History
reads are in ``history``. Every query filters by scope and session first; nothing returned ever
mixes sessions or scopes.

Every read names the caller's ``owner``: a session another caller owns answers exactly as an
unknown session does (no notes, ``NoteNotFound``), so its existence does not leak. ``owner=None``
(any owner) is for ``services.note_read_audited`` only."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import F

from powercontext.recovery import history, limits
from powercontext.recovery.exceptions import NoteNotFound
from powercontext.recovery.models import RecoverySession, SessionNote, SessionNoteVersion
from powercontext.recovery.text import HintNote, LineMatch, LineSearch, render_hint

HINT_WINDOWS = 10
# The shortest note line ("- a (0 bytes, v1, 2026-01-01T00:00:00Z)" and its line break) is 40
# bytes, so no more notes than this can ever fit in the hint; only these are read.
HINT_NOTES_FETCHED = limits.HINT_MAX_BYTES // 40


@dataclass(frozen=True)
class NoteInfo:
    path: str
    version: int
    size_bytes: int
    updated_at: datetime
    oldest_version: int
    stored_bytes: int  # the note's kept versions


@dataclass(frozen=True)
class NoteListing:
    notes: list[NoteInfo]
    note_count: int
    total_bytes: int
    stored_bytes: int  # every kept version of the session's notes


@dataclass(frozen=True)
class NoteContent:
    path: str
    version: int
    latest_version: int
    oldest_version: int
    mode: str
    content: str
    size_bytes: int
    created_at: datetime


@dataclass(frozen=True)
class NoteMatch:
    """One line of a note that contains the query, with its context lines, in the note's
    current version."""

    path: str
    version: int
    match: LineMatch


@dataclass(frozen=True)
class NoteSearch:
    matches: list[NoteMatch]
    truncated: bool


def _session(scope_id: str, session_id: str, owner: str) -> RecoverySession | None:
    return RecoverySession.objects.filter(scope_id=scope_id, session_id=session_id, owner=owner).first()


def note_list(*, scope_id: str, session_id: str, owner: str, prefix: str | None = None) -> NoteListing:
    """The session's notes by path: path, current version, size, last write, oldest kept version
    and the bytes its kept versions take."""
    session = _session(scope_id, session_id, owner)
    if session is None:
        return NoteListing(notes=[], note_count=0, total_bytes=0, stored_bytes=0)
    rows = SessionNote.objects.filter(session=session)
    if prefix:
        rows = rows.filter(path__startswith=prefix)
    notes = [
        NoteInfo(
            path=path,
            version=version,
            size_bytes=size,
            updated_at=updated,
            oldest_version=oldest,
            stored_bytes=stored,
        )
        for path, version, size, updated, oldest, stored in rows.order_by("path").values_list(
            "path", "current_version", "size_bytes", "updated_at", "oldest_version", "stored_bytes"
        )
    ]
    return NoteListing(
        notes=notes,
        note_count=session.note_count,
        total_bytes=session.total_bytes,
        stored_bytes=session.stored_bytes,
    )


def note_read(
    *, scope_id: str, session_id: str, owner: str | None, path: str, version: int | None = None
) -> NoteContent:
    """A note's latest version, or the given one (immutable) while it is kept; ``NoteNotFound``
    otherwise (a pruned or future version: with the kept range in its details)."""
    notes = SessionNote.objects.filter(session__scope_id=scope_id, session__session_id=session_id, path=path)
    if owner is not None:
        notes = notes.filter(session__owner=owner)
    note = notes.only("pk", "current_version", "oldest_version").first()
    if note is None:
        raise NoteNotFound()
    wanted = version if version is not None else note.current_version
    row = SessionNoteVersion.objects.filter(note=note, version=wanted).first()
    if row is None:
        raise NoteNotFound(
            details={"latest_version": note.current_version, "oldest_version": note.oldest_version}
        )
    return NoteContent(
        path=path,
        version=row.version,
        latest_version=note.current_version,
        oldest_version=note.oldest_version,
        mode=row.mode,
        content=row.content,
        size_bytes=row.size_bytes,
        created_at=row.created_at,
    )


def note_search(*, scope_id: str, session_id: str, owner: str, search: LineSearch) -> NoteSearch:
    """Lines of the session's current notes containing the query literally, by path then line,
    at most ``search.limit`` (``truncated`` when more matched)."""
    rows = (
        SessionNoteVersion.objects.filter(
            note__session__scope_id=scope_id,
            note__session__session_id=session_id,
            note__session__owner=owner,
        )
        .filter(version=F("note__current_version"))
        .order_by("note__path")
        .values_list("note__path", "version", "content")
    )
    found, truncated = search.first_matches(
        (((path, version), content) for path, version, content in rows.iterator(chunk_size=100)),
        limits.LINE_MAX_BYTES,
    )
    matches = [NoteMatch(path=path, version=version, match=match) for (path, version), match in found]
    return NoteSearch(matches=matches, truncated=truncated)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Hint:
    text: str
    size_bytes: int
    truncated: bool


def recovery_hint(*, scope_id: str, session_id: str, owner: str) -> Hint:
    """The session's recovery hint: notes (most recently written first, then by path) and the
    history's extent, metadata only, at most ``HINT_MAX_BYTES`` UTF-8 bytes."""
    session = _session(scope_id, session_id, owner)
    notes: list[HintNote] = []
    note_count = total_bytes = 0
    if session is not None:
        note_count, total_bytes = session.note_count, session.total_bytes
        notes = [
            HintNote(path=path, size_bytes=size, version=version, updated_at=_iso(updated))
            for path, size, version, updated in SessionNote.objects.filter(session=session)
            .order_by("-updated_at", "path")
            .values_list("path", "size_bytes", "current_version", "updated_at")[:HINT_NOTES_FETCHED]
        ]
    text, truncated = render_hint(
        notes=notes,
        note_count=note_count,
        total_bytes=total_bytes,
        history=history.history_extent(
            scope_id=scope_id, session_id=session_id, owner=owner, max_windows=HINT_WINDOWS
        ),
        max_bytes=limits.HINT_MAX_BYTES,
    )
    return Hint(text=text, size_bytes=len(text.encode("utf-8")), truncated=truncated)
