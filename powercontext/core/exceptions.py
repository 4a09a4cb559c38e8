"""The domain exception hierarchy. One HTTP exception handler maps these to the error envelope.

Messages are fixed, human-readable strings. They never quote untrusted input (queries, text,
scope ids, entry ids), so an error body or a log line can never leak it.
"""

from __future__ import annotations

from typing import Any


class PowerContextError(Exception):
    status = 500
    code = "internal_error"
    default_message = "The server failed without exposing internal details."

    def __init__(self, message: str | None = None, details: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        self.details = details
        super().__init__(self.message)


class InvalidRequest(PowerContextError):
    status = 422
    code = "invalid_request"
    default_message = "The request violates the API contract."


class CapabilityNotSupported(InvalidRequest):
    code = "capability_not_supported"
    default_message = "The requested capability is not supported by this server."


class Unauthorized(PowerContextError):
    status = 401
    code = "unauthorized"
    default_message = "A valid bearer token is required."


class Forbidden(PowerContextError):
    status = 403
    code = "forbidden"
    default_message = "This token may not perform this operation."


class OriginForbidden(Forbidden):
    code = "origin_forbidden"
    default_message = "Cross-origin requests to this API are not allowed."


class ScopeForbidden(Forbidden):
    code = "scope_forbidden"
    default_message = "This token may not access this scope."


class UnsupportedMediaType(PowerContextError):
    status = 415
    code = "unsupported_media_type"
    default_message = "The request body must be sent as application/json."


class NotFound(PowerContextError):
    status = 404
    code = "not_found"
    default_message = "The requested resource was not found."


class MemoryNotFound(NotFound):
    code = "memory_not_found"
    default_message = "The requested Memory value was not found."


class Conflict(PowerContextError):
    status = 409
    code = "conflict"
    default_message = "The command conflicts with current state."


class SourceConflict(Conflict):
    code = "source_conflict"
    default_message = "A Source with this id already exists with different content."


class RevisionConflict(Conflict):
    code = "revision_conflict"
    default_message = "The Memory revision is not the current head."


class MemoryEntryInactive(Conflict):
    code = "memory_entry_inactive"
    default_message = "The Memory entry is not active."


class RuntimeNotReady(PowerContextError):
    status = 503
    code = "runtime_not_ready"
    default_message = "A required runtime dependency is unavailable."


class InvariantFailure(PowerContextError):
    """An internal invariant was violated: answer 500 and never return partial results."""


class ArtifactNotFound(NotFound):
    code = "artifact_not_found"
    default_message = "The requested Artifact revision was not found."


class CandidateNotFound(NotFound):
    code = "candidate_not_found"
    default_message = "The requested Candidate was not found."


class CandidateConflict(Conflict):
    code = "candidate_conflict"
    default_message = "The Candidate version is not the current version."


class CandidateTerminal(Conflict):
    code = "candidate_terminal"
    default_message = "The Candidate was already approved or rejected."


class ArtifactConflict(Conflict):
    code = "artifact_conflict"
    default_message = "The target is not the latest revision of its Artifact."
