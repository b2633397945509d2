"""Pure ASGI middlewares that refuse a request before any route sees it: a body over the size
limit (413, streamed or not), a URL over its length limit (414), a URL holding the NUL
character (422; registry/nul.py), a client or key over its rate limit (429; app/limits/)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fastapi.security.utils import get_authorization_scheme_param
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.error_handlers import error_response
from app.limits.answer import too_many
from registry.nul import NUL

if TYPE_CHECKING:
    from app.services import Services


def _message(limit: int) -> str:
    return f"the request body exceeds the limit of {limit} bytes"


class BodySizeLimit:
    """Refuses a declared Content-Length over the limit at once, and counts streamed bodies.

    The limit is ``limit``, or for a path listed in ``streamed`` with that content type
    (``POST /v1/tools/bulk`` as NDJSON: app/tools/imports.py) the larger one given there.
    """

    def __init__(
        self, app: ASGIApp, limit: int, streamed: Mapping[tuple[str, str], int] | None = None
    ) -> None:
        self.app = app
        self.limit = limit
        self.streamed = dict(streamed or {})

    def limit_for(self, scope: Scope) -> int:
        if not self.streamed:
            return self.limit
        headers = dict(scope.get("headers", ()))
        media = headers.get(b"content-type", b"").split(b";")[0].strip().decode("latin-1")
        return self.streamed.get((scope.get("path", ""), media.lower()), self.limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope)
        declared = dict(scope.get("headers", ())).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _error(send, 413, "payload_too_large", _message(limit))
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # An HTTPException passes FastAPI's body parsing untouched; the one
                    # error handler renders it.
                    raise HTTPException(413, _message(limit))
            return message

        await self.app(scope, limited_receive, send)


def url_message(limit: int) -> str:
    return f"the URL (path and query string) exceeds the limit of {limit} bytes"


class UrlLengthLimit:
    """Refuses a request whose path and query string, as sent, are over ``limit`` bytes (414).
    ``toolreach serve`` refuses it earlier, in the HTTP parser (app/api/parser_limits.py);
    this is the same rule under any other server."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and url_bytes(scope) > self.limit:
            await _error(send, 414, "uri_too_long", url_message(self.limit))
            return
        await self.app(scope, receive, send)


def url_bytes(scope: Scope) -> int:
    """The length of the request target as sent: the raw path, "?" and the query string."""
    raw = scope.get("raw_path") or scope.get("path", "").encode()
    query = scope.get("query_string", b"")
    return len(raw) + (len(query) + 1 if query else 0)


class NoNulInUrl:
    """Refuses a path or query string holding U+0000 (``%00``) with a 422: no route, filter or
    database query ever sees one (PostgreSQL cannot hold it; SQLite matched nothing)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            NUL in scope.get("path", "") or b"%00" in scope.get("query_string", b"")
        ):
            message = "the URL may not contain the NUL character (U+0000, %00)"
            await _error(send, 422, "invalid_input", message)
            return
        await self.app(scope, receive, send)


def rate_limited(path: str) -> bool:
    """The traffic the rate limits count: the API and MCP, not probes, metrics or pages."""
    return path.startswith("/v1/") or path == "/mcp" or path.startswith("/mcp/")


class RateLimits:
    """Counts each /v1 and /mcp request against its client's and its key's limits, and
    refuses one over them (429 with Retry-After) before any route runs; a bearer key no one
    knows counts as a failed sign-in of its client. Memory only (app/limits/limiter.py)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope.get("app")
        services: Services | None = getattr(getattr(app, "state", None), "services", None)
        if (
            scope["type"] != "http"
            or services is None
            or not services.limiter.limits.on  # all three limits set to 0: nothing to count
            or not rate_limited(scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        limiter, client = services.limiter, services.limiter.client(scope)
        secret = bearer_key(Headers(scope=scope))
        record = services.keys.resolve(secret) if secret else None
        refusal = limiter.admit(client, record.id if record is not None else None)
        if refusal is not None:
            services.metrics.rate_limited.labels(refusal.kind).inc()
            error = too_many(refusal)
            await error_response(
                error.status_code, error.code, error.message, error.details, error.headers
            )(scope, receive, send)
            return
        if secret and record is None:
            limiter.failed(client)  # an unknown or revoked key: the route answers 401
        await self.app(scope, receive, send)


# The 429 every /v1 route may answer, for its OpenAPI description (app/main.py).
TOO_MANY_REQUESTS: dict[str, Any] = {
    "description": "Over a rate limit (docs/DEPLOY.md, Limits), in the one error shape.",
    "headers": {
        "Retry-After": {
            "description": "Seconds until the limit's window ends.",
            "schema": {"type": "integer"},
        }
    },
    "content": {
        "application/json": {
            "example": {
                "error": {
                    "code": "too_many_requests",
                    "message": "too many requests from this address; retry in 42 s",
                    "details": {"limit": "client", "retry_after": 42},
                }
            }
        }
    },
}


def bearer_key(headers: Headers) -> str:
    """The key of an ``Authorization: Bearer`` header, as app/deps.py reads it; else ""."""
    scheme, key = get_authorization_scheme_param(headers.get("authorization"))
    return key if scheme.lower() == "bearer" else ""


async def _error(send: Send, status: int, code: str, message: str) -> None:
    """An answer in the one error shape, sent before any route ran."""
    body = json.dumps({"error": {"code": code, "message": message, "details": None}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
