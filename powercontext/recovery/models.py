"""Tables of session recovery state: one row per session, a head row per note, immutable versions.

A session is ``(scope_id, session_id)``. ``RecoverySession`` carries the session's totals (note
count, bytes of the notes' current versions, bytes of every kept version); every note write locks
it, so the per-session caps hold under concurrent writers. ``SessionNote`` is a note's head: its
current version and size, its oldest kept version and the bytes of its kept versions.
``SessionNoteVersion`` rows are inserted once and never updated (the admin shows them view-only);
each holds the note's full content as of that version. A note keeps its newest
``POWERCONTEXT_RECOVERY_NOTE_VERSIONS`` versions: the write that makes a newer one deletes the
older ones in its own transaction. ``NoteReadAudit`` rows record every operator read of a note
(insert-only, view-only in the admin).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from powercontext.core.models import LOCAL_OWNER, OWNER_MAX_LENGTH, PkNamedModel

SCOPE_MAX_LENGTH = 256
SESSION_MAX_LENGTH = 256
PATH_MAX_LENGTH = 256


class RecoverySession(PkNamedModel):
    """One agent session of a scope with its totals (note count, bytes of the current versions,
    bytes of all kept versions); every note write locks this row, so the per-session caps hold
    under concurrent writers. ``owner`` is the ``owner_key`` of the caller whose write created it;
    only that caller reads or writes its notes (sessions from before ownership are ``local``)."""

    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    session_id = models.CharField(max_length=SESSION_MAX_LENGTH)
    owner = models.CharField(max_length=OWNER_MAX_LENGTH, default=LOCAL_OWNER)
    note_count = models.PositiveIntegerField(default=0)
    total_bytes = models.BigIntegerField(default=0)
    stored_bytes = models.BigIntegerField(default=0)  # every kept version of every note
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "recovery session"
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "session_id"], name="recovery_session_unique"),
            models.CheckConstraint(condition=Q(total_bytes__gte=0), name="recovery_session_bytes_valid"),
            models.CheckConstraint(condition=Q(stored_bytes__gte=0), name="recovery_session_stored_valid"),
        ]
        indexes = [models.Index(fields=["updated_at"], name="recovery_session_updated")]


class SessionNote(models.Model):
    """A note's head: the current version and its size, the oldest version still kept and the
    bytes of every kept version. Moves only inside a locked write."""

    session = models.ForeignKey(RecoverySession, on_delete=models.CASCADE, related_name="notes")
    path = models.CharField(max_length=PATH_MAX_LENGTH)
    current_version = models.PositiveIntegerField()
    size_bytes = models.PositiveIntegerField()
    oldest_version = models.PositiveIntegerField(default=1)
    stored_bytes = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField()

    class Meta:
        verbose_name = "session note"
        constraints = [
            models.UniqueConstraint(fields=["session", "path"], name="recovery_note_path_unique"),
            models.CheckConstraint(condition=Q(current_version__gte=1), name="recovery_note_version_valid"),
            models.CheckConstraint(
                condition=Q(oldest_version__gte=1, oldest_version__lte=F("current_version")),
                name="recovery_note_oldest_valid",
            ),
        ]
        indexes = [models.Index(fields=["session", "-updated_at", "path"], name="recovery_note_recent")]

    def __str__(self) -> str:
        return f"session note #{self.pk} v{self.current_version}"


class SessionNoteVersion(models.Model):
    """One immutable version of a note: its full content after a replace or an append. Deleted,
    never changed, once the note has ``POWERCONTEXT_RECOVERY_NOTE_VERSIONS`` newer versions.
    ``created_at`` is the write's own clock reading, the same one the note head's ``updated_at``
    and the session's totals take, so the three always agree."""

    class Mode(models.TextChoices):
        REPLACE = "replace"
        APPEND = "append"

    note = models.ForeignKey(SessionNote, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    mode = models.CharField(max_length=16, choices=Mode.choices)
    content = models.TextField(blank=True)
    size_bytes = models.PositiveIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        verbose_name = "session note version"
        constraints = [
            models.UniqueConstraint(fields=["note", "version"], name="recovery_note_version_unique"),
        ]

    def __str__(self) -> str:
        return f"note version #{self.pk} (v{self.version})"


class NoteReadAudit(models.Model):
    """One operator's (or reviewer's) read of a note of a session it does not own: who, why and
    what, inserted in the read's own transaction; never changed. It outlives the note (no foreign
    key), so forgetting a session keeps the record of who read it."""

    reader = models.CharField(max_length=OWNER_MAX_LENGTH)  # the reader's owner_key
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reason = models.TextField()
    scope_id = models.CharField(max_length=SCOPE_MAX_LENGTH)
    session_id = models.CharField(max_length=SESSION_MAX_LENGTH)
    session_owner = models.CharField(max_length=OWNER_MAX_LENGTH)
    path = models.CharField(max_length=PATH_MAX_LENGTH)
    version = models.PositiveIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        verbose_name = "note read audit"
        indexes = [models.Index(fields=["scope_id", "session_id"], name="recovery_audit_session")]

    def __str__(self) -> str:
        return f"note read #{self.pk}"
