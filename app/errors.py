"""The service's own errors: about who may call, and whether it can answer now.

The registry's errors (registry/errors.py) are about tools and the data sent; these are
about the service around them, so the registry, which knows no keys and no queues, holds
none of them. Together they are the whole tree, each with its HTTP status and stable code:

    ToolReachError          500 internal           registry  (the base)
    ├── BadRequest          400 bad_request        registry
    │   └── InvalidInput    422 invalid_input      registry  (a card, call or query is wrong)
    ├── Unauthorized        401 unauthorized       app       (no key, or an unknown one)
    ├── Forbidden           403 forbidden          app       (a known key without the right)
    ├── NotFound            404 not_found          registry
    ├── Conflict            409 conflict           registry
    ├── PayloadTooLarge     413 payload_too_large  registry
    ├── TooManyRequests     429 too_many_requests  app       (over a rate limit: Retry-After)
    └── Unavailable         503 unavailable        app       (database or index not ready)
        └── Overloaded      503 overloaded         app       (too many steps waiting: retry)

("registry" is registry/errors.py, "app" this module.)

The web layer (app/api/error_handlers.py) renders every one of them, and every other error,
in one JSON shape: ``{"error": {"code": ..., "message": ..., "details": ...}}``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from registry.errors import ToolReachError


class Unauthorized(ToolReachError):
    """No key, or a key the service does not know; the answer asks for a bearer token."""

    status_code = 401
    code = "unauthorized"
    headers = MappingProxyType({"WWW-Authenticate": "Bearer"})


class Forbidden(ToolReachError):
    """A known key without the right to this."""

    status_code = 403
    code = "forbidden"


class Unavailable(ToolReachError):
    """The database or the index cannot serve this now; a retry later may succeed."""

    status_code = 503
    code = "unavailable"


class Overloaded(Unavailable):
    """Refused before any work, so a retry is safe; the answer carries ``Retry-After``."""

    code = "overloaded"
    headers = MappingProxyType({"Retry-After": "1"})


class TooManyRequests(ToolReachError):
    """Over a rate limit (app/limits/); the answer says in ``Retry-After`` when to retry."""

    status_code = 429
    code = "too_many_requests"

    def __init__(self, message: str, retry_after: int, details: Any = None) -> None:
        super().__init__(message, details)
        self.headers = MappingProxyType({"Retry-After": str(retry_after)})
