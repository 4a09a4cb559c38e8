"""Refusals of session recovery writes and reads, each mapped by the one error mapper
(``context_api.errors``) to its status and code. Messages are fixed (``core.exceptions.MESSAGES``);
details carry only numbers."""

from __future__ import annotations

from powercontext.core.exceptions import Conflict, InvalidRequest, NotFound


class NoteNotFound(NotFound, code="note_not_found"): ...


class NoteConflict(Conflict, code="note_conflict"): ...


class NoteTooLarge(InvalidRequest, code="note_too_large"): ...


class SessionNotesTooLarge(InvalidRequest, code="session_notes_too_large"): ...


class TooManyNotes(InvalidRequest, code="too_many_notes"): ...
