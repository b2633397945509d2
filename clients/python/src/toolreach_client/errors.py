"""What the client raises. Every error answer of the service has one shape,
``{"error": {"code", "message", "details"}}``; it becomes one of these, by status:

    ToolReachError
    ├── TransportError          no answer: the service could not be reached, or timed out
    └── APIError                an error answer (status, code, message, details, retry_after)
        ├── BadRequest          400  malformed_json
        ├── Unauthorized        401  a key is needed, or it is unknown
        ├── Forbidden           403  the key may not do this
        ├── NotFound            404  no such tool, version or route
        ├── Conflict            409  the tool exists, or a feedback report contradicts one
        ├── PayloadTooLarge     413
        ├── InvalidInput        422  the request breaks its schema (details lists why)
        ├── RateLimited         429  (Retry-After)
        └── Unavailable         503  starting, stopping, no database, or overloaded (Retry-After)

A tool call through the gateway that fails is not an exception: ``CallResult.error`` says why
(``raise_for_error()`` turns it into a ``ToolCallError``).
"""

from __future__ import annotations

from typing import Any

import httpx


class ToolReachError(Exception):
    """Anything the client raises."""


class TransportError(ToolReachError):
    """No answer came: connection refused or reset, a timeout."""


class APIError(ToolReachError):
    """An error answer from the service, in its one shape."""

    status: int = 0

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.retry_after = retry_after
        # An earlier try of the same request got no answer, so it may have landed (a 409
        # after it may be that try's own work).
        self.unanswered = False


class BadRequest(APIError):
    status = 400


class Unauthorized(APIError):
    status = 401


class Forbidden(APIError):
    status = 403


class NotFound(APIError):
    status = 404


class Conflict(APIError):
    status = 409


class PayloadTooLarge(APIError):
    status = 413


class InvalidInput(APIError):
    status = 422


class RateLimited(APIError):
    status = 429


class Unavailable(APIError):
    status = 503


class ToolCallError(ToolReachError):
    """A tool call the gateway answered with a structured error."""

    def __init__(
        self,
        name: str,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        suggestion: str | None = None,
        details: Any = None,
    ) -> None:
        super().__init__(f"{name}: {code}: {message}")
        self.name = name
        self.code = code
        self.message = message
        self.retryable = retryable
        self.suggestion = suggestion
        self.details = details


BY_STATUS: dict[int, type[APIError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        PayloadTooLarge,
        InvalidInput,
        RateLimited,
        Unavailable,
    )
}


def error_from_response(response: httpx.Response, retry_after: float | None) -> APIError:
    """The typed exception for an error answer; a body not in the shape is kept as text."""
    try:
        body = response.json()["error"]
        code, message, details = str(body["code"]), str(body["message"]), body.get("details")
    except (ValueError, KeyError, TypeError):
        code, message, details = f"http_{response.status_code}", response.text[:500], None
    cls = BY_STATUS.get(response.status_code, APIError)
    return cls(response.status_code, code, message, details, retry_after)
