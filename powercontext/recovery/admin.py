"""Django admin of session recovery state, view-only: sessions with their owners, note heads, note
versions (metadata: a note's text is read only through the audited operator read,
``read_session_note`` with a ``reason``) and the audit rows of those reads. The session's history
is its captured sources (the Source admin)."""

from __future__ import annotations

from django.contrib import admin

from powercontext.core.admin import ReadOnlyAdmin
from powercontext.recovery.models import NoteReadAudit, RecoverySession, SessionNote, SessionNoteVersion


@admin.register(RecoverySession)
class RecoverySessionAdmin(ReadOnlyAdmin):
    """Sessions with their note totals, found by exact scope or session id (never a substring
    scan over untrusted ids)."""

    list_display = (
        "id",
        "scope_id",
        "session_id",
        "owner",
        "note_count",
        "total_bytes",
        "stored_bytes",
        "updated_at",
    )
    list_select_related = ()
    search_fields = ("scope_id__exact", "session_id__exact")
    search_help_text = "Exact scope id or session id."
    fields = (
        "scope_id",
        "session_id",
        "owner",
        "note_count",
        "total_bytes",
        "stored_bytes",
        "created_at",
        "updated_at",
    )


@admin.register(SessionNote)
class SessionNoteAdmin(ReadOnlyAdmin):
    """Note heads: path, current version and size, oldest kept version and the bytes of the kept
    versions; a note's content is on its versions (the session note version pages)."""

    list_display = ("id", "session", "path", "current_version", "size_bytes", "stored_bytes", "updated_at")
    list_select_related = ("session",)
    search_fields = ("session__scope_id__exact", "session__session_id__exact", "path__exact")
    search_help_text = "Exact scope id, session id or note path."
    fields = (
        "session",
        "path",
        "current_version",
        "oldest_version",
        "size_bytes",
        "stored_bytes",
        "created_at",
        "updated_at",
    )


@admin.register(SessionNoteVersion)
class SessionNoteVersionAdmin(ReadOnlyAdmin):
    """Every kept version of every note, without its content: a note belongs to its session's
    owner, and an operator reads one with a reason through ``read_session_note``, which records
    the read (``NoteReadAudit``). Versions are never changed, and a note keeps its newest
    ``POWERCONTEXT_RECOVERY_NOTE_VERSIONS`` of them."""

    list_display = ("id", "note", "version", "mode", "size_bytes", "created_at")
    list_select_related = ("note",)
    search_fields = ("note__session__session_id__exact", "note__path__exact")
    search_help_text = "Exact session id or note path."
    fields = ("note", "version", "mode", "size_bytes", "created_at")


@admin.register(NoteReadAudit)
class NoteReadAuditAdmin(ReadOnlyAdmin):
    """Who read which session's note, when and why: one row per operator read, insert-only."""

    list_display = ("id", "created_at", "reader", "user", "scope_id", "session_id", "path", "version")
    list_select_related = ("user",)
    search_fields = ("scope_id__exact", "session_id__exact", "reader__exact")
    search_help_text = "Exact scope id, session id or reader (token:<id> or local)."
    fields = (
        "created_at",
        "reader",
        "user",
        "reason",
        "scope_id",
        "session_id",
        "session_owner",
        "path",
        "version",
    )
