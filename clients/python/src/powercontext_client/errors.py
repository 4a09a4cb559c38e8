"""The client's exceptions: one per error class of the contract, with status, code, message,
details and the response's request id."""

from __future__ import annotations

from typing import Any

# --------------------------------------------------------------------------- errors


class PowerContextError(Exception):
    """Base class. ``status`` is None when no HTTP response was received."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        details: Any = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details = details
        self.request_id = request_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class AuthenticationError(PowerContextError):
    """401: a valid bearer token is required."""


class NotFoundError(PowerContextError):
    """404: the requested value does not exist (or the server predates the operation)."""


class ConflictError(PowerContextError):
    """409: the command conflicts with current state (stale version, terminal candidate, ...)."""


class InvalidRequestError(PowerContextError):
    """422: the request violates the contract."""


class CapabilityNotSupportedError(InvalidRequestError):
    """422 with code ``capability_not_supported`` (e.g. an unavailable search mode)."""


class ServerError(PowerContextError):
    """500: the server failed."""


class UnavailableError(PowerContextError):
    """503, or no response at all (connection failure, timeout)."""


class UnexpectedResponseError(PowerContextError):
    """A status the operation does not declare (including a wrong 2xx), or a body that is not a JSON object."""


_ERROR_CLASSES: dict[int, type[PowerContextError]] = {
    401: AuthenticationError,
    404: NotFoundError,
    409: ConflictError,
    422: InvalidRequestError,
    500: ServerError,
    503: UnavailableError,
}
