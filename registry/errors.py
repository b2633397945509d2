"""The base of every ToolReach error, and the errors about tools and the data sent.

Each error carries its HTTP status and a stable code:

    ToolReachError            500 internal
    ├── BadRequest            400 bad_request
    │   └── InvalidInput      422 invalid_input        (a card, a call or a query is wrong)
    ├── NotFound              404 not_found
    ├── Conflict              409 conflict
    └── PayloadTooLarge       413 payload_too_large

The service's own errors (a missing key, a busy router) subclass ``ToolReachError`` in
app/errors.py, whose docstring draws the whole tree. The web layer renders every one of
them, and every other error, in one JSON shape:
``{"error": {"code": ..., "message": ..., "details": ...}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
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


class NotFound(ToolReachError):
    status_code = 404
    code = "not_found"


class Conflict(ToolReachError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(ToolReachError):
    status_code = 413
    code = "payload_too_large"
