"""Refusals of session recovery writes and reads, each mapped by the one error mapper
(``context_api.errors``) to its status and code. Messages are fixed; details carry only numbers."""

from __future__ import annotations

from powercontext.core.exceptions import Conflict, InvalidRequest, NotFound


class NoteNotFound(NotFound):
    code = "note_not_found"
    default_message = "The session has no such note (or no such version of it)."


class NoteConflict(Conflict):
    code = "note_conflict"
    default_message = "The note is not at the expected version."


class NoteTooLarge(InvalidRequest):
    code = "note_too_large"
    default_message = "The note would exceed the per-note byte limit; nothing was written."


class SessionNotesTooLarge(InvalidRequest):
    code = "session_notes_too_large"
    default_message = "The session's notes would exceed the per-session byte limit; nothing was written."


class TooManyNotes(InvalidRequest):
    code = "too_many_notes"
    default_message = "The session already has the maximum number of notes; nothing was written."
