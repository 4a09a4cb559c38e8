"""Session recovery writes: note replace/append, and forgetting. Each public write is one
transaction.

Every note write locks the session's ``RecoverySession`` row (PostgreSQL: ``SELECT ... FOR
UPDATE``; SQLite: the IMMEDIATE transaction already holds the database write lock), then reads the
note head, checks every limit, inserts the next immutable version, deletes the versions older than
the newest ``POWERCONTEXT_RECOVERY_NOTE_VERSIONS`` and moves the head and the session totals. Two
concurrent appends to one note therefore run one after the other and both land; a refusal raises
inside the transaction, so nothing of it is written (not even the session row a first write would
have created).

A session belongs to the caller whose write created it (``RecoverySession.owner``, an
``owner_key``); a write by anyone else is ``NoteNotFound``, the answer a read of an unknown note
gets. Note content is redacted (``powercontext.core.redaction_detectors``) before it is stored:
this is the one door notes come in by, so a secret written into a note is never stored or read
back. An operator's read of a note it does not own goes through ``note_read_audited``, which
writes the audit row in the read's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from powercontext.core.redaction_detectors import redact
from powercontext.core.transactions import require_transaction
from powercontext.recovery import limits, selectors
from powercontext.recovery.exceptions import (
    NoteConflict,
    NoteNotFound,
    NoteTooLarge,
    SessionNotesTooLarge,
    TooManyNotes,
)
from powercontext.recovery.models import NoteReadAudit, RecoverySession, SessionNote, SessionNoteVersion

REPLACE = SessionNoteVersion.Mode.REPLACE
APPEND = SessionNoteVersion.Mode.APPEND


@dataclass(frozen=True)
class NoteWritten(selectors.NoteInfo):
    """The written note as a listing shows it, and its session's totals after the write."""

    note_count: int
    total_bytes: int
    session_stored_bytes: int  # every kept version of the session's notes


def _locked_session(scope_id: str, session_id: str, owner: str) -> RecoverySession:
    """The session row, created for ``owner`` if missing, locked until the transaction ends;
    ``NoteNotFound`` when another caller owns it."""
    RecoverySession.objects.bulk_create(
        [RecoverySession(scope_id=scope_id, session_id=session_id, owner=owner)], ignore_conflicts=True
    )
    session = RecoverySession.objects.select_for_update().get(scope_id=scope_id, session_id=session_id)
    if session.owner != owner:
        raise NoteNotFound()
    return session


def note_write(
    *,
    scope_id: str,
    session_id: str,
    owner: str,
    path: str,
    content: str,
    mode: str = REPLACE,
    expected_version: int | None = None,
) -> NoteWritten:
    """Write the next version of a note: ``replace`` sets its content, ``append`` adds to it.

    ``owner``: the caller's ``owner_key``; the session's first write makes it the owner, and a
    write to a session another caller owns is ``NoteNotFound`` (nothing written). ``content`` is
    redacted before anything else (the limits count the redacted text).

    ``expected_version`` (optional): the version the caller last saw, 0 for "the note must not
    exist yet"; any other current version is ``NoteConflict``. Limits: ``NoteTooLarge``,
    ``SessionNotesTooLarge``, ``TooManyNotes``; each leaves nothing behind. The note then keeps
    its newest ``POWERCONTEXT_RECOVERY_NOTE_VERSIONS`` versions; older ones are deleted here."""
    if mode not in (REPLACE, APPEND):
        raise ValueError("mode must be replace or append")
    # Outside the transaction: redaction is CPU work that must not hold the session lock.
    content = redact(content).text
    with transaction.atomic(durable=True):
        session = _locked_session(scope_id, session_id, owner)
        note = SessionNote.objects.filter(session=session, path=path).first()
        current = note.current_version if note is not None else 0
        if expected_version is not None and expected_version != current:
            raise NoteConflict(details={"current_version": current})
        if note is not None and mode == APPEND:
            previous = (
                SessionNoteVersion.objects.filter(note=note, version=note.current_version)
                .values_list("content", flat=True)
                .get()
            )
            new_content = previous + content
        else:
            new_content = content
        size = len(new_content.encode("utf-8"))
        if size > limits.NOTE_MAX_BYTES:
            raise NoteTooLarge(details={"limit_bytes": limits.NOTE_MAX_BYTES, "size_bytes": size})
        old_size = note.size_bytes if note is not None else 0
        total = session.total_bytes - old_size + size
        if total > limits.SESSION_MAX_BYTES:
            raise SessionNotesTooLarge(
                details={"limit_bytes": limits.SESSION_MAX_BYTES, "total_bytes": total}
            )
        count = session.note_count + (1 if note is None else 0)
        if count > limits.NOTES_MAX:
            raise TooManyNotes(details={"limit": limits.NOTES_MAX})
        now = timezone.now()
        if note is None:
            note = SessionNote.objects.create(
                session=session,
                path=path,
                current_version=1,
                size_bytes=size,
                oldest_version=1,
                stored_bytes=size,
                updated_at=now,
            )
            pruned = 0
        else:
            note.current_version += 1
            pruned = _prune(note, keep=settings.POWERCONTEXT_RECOVERY_NOTE_VERSIONS)
            note.size_bytes = size
            note.stored_bytes += size - pruned
            note.updated_at = now
            note.save(
                update_fields=[
                    "current_version",
                    "size_bytes",
                    "oldest_version",
                    "stored_bytes",
                    "updated_at",
                ]
            )
        SessionNoteVersion.objects.create(
            note=note,
            version=note.current_version,
            mode=mode,
            content=new_content,
            size_bytes=size,
            created_at=now,
        )
        stored = session.stored_bytes + size - pruned
        RecoverySession.objects.filter(pk=session.pk).update(
            note_count=count, total_bytes=total, stored_bytes=stored, updated_at=now
        )
    return NoteWritten(
        path=path,
        version=note.current_version,
        size_bytes=size,
        updated_at=now,
        oldest_version=note.oldest_version,
        stored_bytes=note.stored_bytes,
        note_count=count,
        total_bytes=total,
        session_stored_bytes=stored,
    )


def _prune(note: SessionNote, *, keep: int) -> int:
    """Delete the versions of ``note`` (whose ``current_version`` is already the one being
    written) that fall out of its newest ``keep``, and move ``note.oldest_version`` past them.
    Returns the bytes deleted."""
    oldest = note.current_version - keep + 1
    if oldest <= note.oldest_version:
        return 0
    stale = list(
        SessionNoteVersion.objects.filter(note=note, version__lt=oldest).values_list("pk", "size_bytes")
    )
    if stale:
        SessionNoteVersion.objects.filter(pk__in=[pk for pk, _size in stale]).delete()
    note.oldest_version = oldest
    return sum(size for _pk, size in stale)


def note_read_audited(
    *,
    scope_id: str,
    session_id: str,
    path: str,
    version: int | None,
    reader: str,
    user: Any,
    reason: str,
) -> selectors.NoteContent:
    """An operator's (or reviewer's) read of any session's note, whoever owns it: the read and
    its ``NoteReadAudit`` row (``reader``: the operator's ``owner_key``; ``user``: the token's
    user, or None; ``reason``: why) in one transaction. ``NoteNotFound`` as for the owner's read;
    a read that finds nothing records nothing."""
    with transaction.atomic(durable=True):
        note = selectors.note_read(
            scope_id=scope_id, session_id=session_id, owner=None, path=path, version=version
        )
        session_owner = (
            RecoverySession.objects.filter(scope_id=scope_id, session_id=session_id)
            .values_list("owner", flat=True)
            .get()
        )
        NoteReadAudit.objects.create(
            reader=reader,
            user=user,
            reason=reason,
            scope_id=scope_id,
            session_id=session_id,
            session_owner=session_owner,
            path=path,
            version=note.version,
            created_at=timezone.now(),
        )
    return note


# --- forgetting (called by the pipeline inside its own transaction, and by the command) --------


def notes_forget_within(*, scope_id: str, session_ids: list[str] | None = None) -> int:
    """Delete the notes of ``session_ids`` of the scope (all of its sessions when None), inside
    the caller's transaction. Returns the number of sessions removed."""
    require_transaction("notes_forget_within")
    sessions = RecoverySession.objects.filter(scope_id=scope_id)
    if session_ids is not None:
        sessions = sessions.filter(session_id__in=sorted(session_ids))
    return _delete(list(sessions.values_list("pk", flat=True)))


def notes_prune_within(*, scope_id: str, before: datetime) -> int:
    """Delete the scope's sessions whose notes were last written before ``before`` (the
    pipeline's retention), inside the caller's transaction. Returns the sessions removed."""
    require_transaction("notes_prune_within")
    sessions = RecoverySession.objects.filter(scope_id=scope_id, updated_at__lt=before)
    return _delete(list(sessions.values_list("pk", flat=True)))


def notes_forget(*, scope_id: str, session_ids: list[str] | None = None) -> int:
    """Forget a scope's (or some of its sessions') notes: one transaction."""
    with transaction.atomic(durable=True):
        return notes_forget_within(scope_id=scope_id, session_ids=session_ids)


def _delete(pks: list[int]) -> int:
    if not pks:
        return 0
    SessionNoteVersion.objects.filter(note__session_id__in=pks).delete()
    SessionNote.objects.filter(session_id__in=pks).delete()
    RecoverySession.objects.filter(pk__in=pks).delete()
    return len(pks)
