"""The error hierarchy of ToolReach. Each error carries its HTTP status and a stable code.

    ToolReachError            500 internal
    ├── BadRequest            400 bad_request
    │   └── InvalidInput      422 invalid_input        (a card, a call or a query is wrong)
    ├── Unauthorized          401 unauthorized          (no or unknown key)
    ├── Forbidden             403 forbidden             (a known key without the right)
    ├── NotFound              404 not_found
    ├── Conflict              409 conflict
    ├── PayloadTooLarge       413 payload_too_large
    └── Unavailable           503 unavailable           (the database or the index is not ready)
        └── Overloaded        503 overloaded            (too many steps waiting: retry later)

The web layer renders every one of them, and every other error, in one JSON shape:
``{"error": {"code": ..., "message": ..., "details": ...}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


class ToolReachError(Exception):
    status_code = 500
    code = "internal"
    headers: Mapping[str, str] | None = None  # HTTP headers the answer carries

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class BadRequest(ToolReachError):
    status_code = 400
    code = "bad_request"


class InvalidInput(BadRequest):
    status_code = 422
    code = "invalid_input"


class Unauthorized(ToolReachError):
    status_code = 401
    code = "unauthorized"
    headers = MappingProxyType({"WWW-Authenticate": "Bearer"})


class Forbidden(ToolReachError):
    status_code = 403
    code = "forbidden"


class NotFound(ToolReachError):
    status_code = 404
    code = "not_found"


class Conflict(ToolReachError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(ToolReachError):
    status_code = 413
    code = "payload_too_large"


class Unavailable(ToolReachError):
    status_code = 503
    code = "unavailable"


class Overloaded(Unavailable):
    """Refused before any work, so a retry is safe; the answer carries ``Retry-After``."""

    code = "overloaded"
    headers = MappingProxyType({"Retry-After": "1"})
