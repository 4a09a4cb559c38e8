"""The domain exception hierarchy. One HTTP exception handler maps these to the error envelope.

Messages are fixed, human-readable strings. They never quote untrusted input (queries, text,
scope ids, entry ids), so an error body or a log line can never leak it.

A class names its ``code`` (and, for a new kind of error, its HTTP ``status``) as class keywords;
its message is that code's line of ``MESSAGES``, so every code and message stands in one table.
"""

from __future__ import annotations

from typing import Any

MESSAGES: dict[str, str] = {
    "internal_error": "The server failed without exposing internal details.",
    "invalid_request": "The request violates the API contract.",
    "capability_not_supported": "The requested capability is not supported by this server.",
    "unauthorized": "A valid bearer token is required.",
    "forbidden": "This token may not perform this operation.",
    "origin_forbidden": "Cross-origin requests to this API are not allowed.",
    "scope_forbidden": "This token may not access this scope.",
    "unsupported_media_type": "The request body must be sent as application/json.",
    "not_found": "The requested resource was not found.",
    "memory_not_found": "The requested Memory value was not found.",
    "artifact_not_found": "The requested Artifact revision was not found.",
    "candidate_not_found": "The requested Candidate was not found.",
    "conflict": "The command conflicts with current state.",
    "source_conflict": "A Source with this id already exists with different content.",
    "revision_conflict": "The Memory revision is not the current head.",
    "memory_entry_inactive": "The Memory entry is not active.",
    "candidate_conflict": "The Candidate version is not the current version.",
    "candidate_terminal": "The Candidate was already approved or rejected.",
    "artifact_conflict": "The target is not the latest revision of its Artifact.",
    "rebase_required": (
        "A revise never moves an update to another revision of its Artifact: rebase it in the "
        "Review Inbox (a three-way merge that keeps the approved text), then revise it."
    ),
    "runtime_not_ready": "A required runtime dependency is unavailable.",
    "database_read_only": (
        "The database accepts no writes right now (it is read-only); nothing was written. "
        "Reads still work; try the write again after Retry-After seconds."
    ),
    "database_full": (
        "The database has no room left for writes; nothing was written. Reads still work; "
        "try the write again after Retry-After seconds."
    ),
    "rate_limited": "Too many requests from this caller; try again after Retry-After seconds.",
    # Session recovery (powercontext.recovery.exceptions); details carry only numbers.
    "note_not_found": "The session has no such note (or no such version of it).",
    "note_conflict": "The note is not at the expected version.",
    "note_too_large": "The note would exceed the per-note byte limit; nothing was written.",
    "session_notes_too_large": "The session's notes would exceed the per-session byte limit; nothing was written.",
    "too_many_notes": "The session already has the maximum number of notes; nothing was written.",
}


class PowerContextError(Exception):
    """The base of every domain error; on its own an internal error (500)."""

    status = 500
    code = "internal_error"
    default_message = MESSAGES["internal_error"]

    def __init_subclass__(cls, *, status: int | None = None, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status
        if code is not None:
            cls.code = code
            cls.default_message = MESSAGES[code]

    def __init__(self, message: str | None = None, details: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        self.details = details
        super().__init__(self.message)


class InvalidRequest(PowerContextError, status=422, code="invalid_request"): ...


class CapabilityNotSupported(InvalidRequest, code="capability_not_supported"): ...


class Unauthorized(PowerContextError, status=401, code="unauthorized"): ...


class Forbidden(PowerContextError, status=403, code="forbidden"): ...


class OriginForbidden(Forbidden, code="origin_forbidden"): ...


class ScopeForbidden(Forbidden, code="scope_forbidden"): ...


class UnsupportedMediaType(PowerContextError, status=415, code="unsupported_media_type"): ...


class NotFound(PowerContextError, status=404, code="not_found"): ...


class MemoryNotFound(NotFound, code="memory_not_found"): ...


class ArtifactNotFound(NotFound, code="artifact_not_found"): ...


class CandidateNotFound(NotFound, code="candidate_not_found"): ...


class Conflict(PowerContextError, status=409, code="conflict"): ...


class SourceConflict(Conflict, code="source_conflict"): ...


class RevisionConflict(Conflict, code="revision_conflict"): ...


class MemoryEntryInactive(Conflict, code="memory_entry_inactive"): ...


class CandidateConflict(Conflict, code="candidate_conflict"): ...


class CandidateTerminal(Conflict, code="candidate_terminal"): ...


class ArtifactConflict(Conflict, code="artifact_conflict"): ...


class RebaseRequired(Conflict, code="rebase_required"):
    """A revise that would move a pending update to another revision of its Artifact (issue 32):
    the proposal was written against the targeted revision, so only a rebase (a three-way merge)
    may move it. ``details``: ``target`` (the update's), ``requested`` (the revise's) and
    ``current`` (the head, or null)."""


class RateLimited(PowerContextError, status=429, code="rate_limited"):
    """Too many requests from one caller; ``retry_after``: seconds until it may try again."""

    def __init__(
        self, message: str | None = None, details: dict[str, Any] | None = None, *, retry_after: int = 60
    ):
        super().__init__(message, details)
        self.retry_after = retry_after


class RuntimeNotReady(PowerContextError, status=503, code="runtime_not_ready"): ...


class DatabaseReadOnly(PowerContextError, status=503, code="database_read_only"): ...


class DatabaseFull(PowerContextError, status=503, code="database_full"): ...


class InvariantFailure(PowerContextError):
    """An internal invariant was violated: answer 500 and never return partial results."""
