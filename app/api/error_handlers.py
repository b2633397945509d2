"""One JSON shape for every error: ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from app.db import DATABASE_TROUBLE
from registry.errors import ToolReachError

log = logging.getLogger("toolreach")

ERROR_SHAPE: dict[str, Any] = {
    "description": "An error, in the one shape every error has.",
    "content": {
        "application/json": {
            "example": {"error": {"code": "not_found", "message": "...", "details": None}}
        }
    },
}

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    414: "uri_too_long",
    415: "unsupported_media_type",
    422: "invalid_input",
    429: "too_many_requests",
}


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def error_response(
    status: int,
    code: str,
    message: str,
    details: Any = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details}}
    return JSONResponse(body, status_code=status, headers=headers)


def _clean(errors: list[Any]) -> list[dict[str, Any]]:
    """Pydantic errors without echoed inputs or internals: where, what, and the type."""
    return [
        {
            "loc": [p for p in err.get("loc", ())],
            "message": err.get("msg", ""),
            "type": err.get("type"),
        }
        for err in errors
    ]


async def _toolreach_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ToolReachError)
    return error_response(exc.status_code, exc.code, exc.message, exc.details, exc.headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(err.get("type") == "json_invalid" for err in errors):
        return _malformed(errors[0], exc.body)
    message = _not_json(request, errors) or "the request does not match its schema"
    return error_response(422, "invalid_input", message, _clean(errors))


def _malformed(error: Mapping[str, Any], body: Any) -> JSONResponse:
    """Malformed JSON, with where it breaks: json's own words ("Unterminated string starting
    at") name no place, so the line and column of the position FastAPI gives are added."""
    detail = error.get("ctx", {}).get("error", "")
    loc = tuple(error.get("loc", ()))
    position = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
    if position is None or not isinstance(body, str):
        return error_response(400, "malformed_json", f"the body is not valid JSON: {detail}")
    line = body.count("\n", 0, position) + 1
    column = position - body.rfind("\n", 0, position)
    where = {"line": line, "column": column, "position": position}
    at = "" if detail.endswith(" at") else " at"
    message = f"the body is not valid JSON: {detail}{at} line {line}, column {column}"
    if position >= len(body):
        message += " (the end of the body: is it cut short?)"
    return error_response(400, "malformed_json", message, where)


def _not_json(request: Request, errors: list[Any]) -> str | None:
    """What to say of a body sent without ``Content-Type: application/json`` (curl's ``-d``
    sends a form type): it is not read as JSON. Not guessed either: a browser may send a
    form or text body to any site without asking first (no CORS preflight), and read as JSON
    such a body could call the open agent endpoints, the gateway's included."""
    sent = request.headers.get("content-type", "")
    kind = sent.split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        return None
    if not any(tuple(err.get("loc", ())) == ("body",) for err in errors):
        return None
    said = f"Content-Type: {sent}" if sent else "no Content-Type"
    return (
        f"the body must be JSON sent with Content-Type: application/json (this request has "
        f"{said}); with curl, add -H 'Content-Type: application/json'"
    )


# FastAPI's words for a body json.loads refused outright (bytes that are not UTF-8, an
# integer of more than 4,300 digits); malformed JSON has the same code everywhere.
_UNPARSED_BODY = "There was an error parsing the body"


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.detail == _UNPARSED_BODY:
        return error_response(
            400, "malformed_json", "the body is not valid JSON (not UTF-8, or a number too long)"
        )
    code = _HTTP_CODES.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    headers = exc.headers
    if exc.status_code == 405:
        allowed = allowed_methods(request.app.router.routes, request.scope)
        if request.method not in allowed.split(", "):  # the router's 405, not an endpoint's
            headers = {**(headers or {}), "Allow": allowed}
    return error_response(exc.status_code, code, message, headers=headers)


def allowed_methods(routes: list[BaseRoute], scope: Scope) -> str:
    """Every method some route serves on this path, for a 405's ``Allow``. Starlette's router
    answers 405 from the first route whose path matched, so its ``Allow`` listed that route's
    methods only (``POST`` for a ``DELETE /v1/tools`` that ``GET`` serves too)."""
    return ", ".join(
        method
        for method in _METHODS
        if any(route.matches({**scope, "method": method})[0] == Match.FULL for route in routes)
    )


DATABASE_RETRY_SECONDS = 5


def first_line(exc: BaseException, limit: int = 300) -> str:
    """An exception's first line of text, or its class name when it has none."""
    lines = str(exc).strip().splitlines()
    return lines[0][:limit] if lines else type(exc).__name__


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """The database cannot be used (``DATABASE_TROUBLE``): 503, one log line. A write in such a
    request either committed or did not; every write is safe to retry (PUT and bulk are
    idempotent, POST /v1/tools answers 409 if the first one landed)."""
    reason = first_line(getattr(exc, "orig", None) or exc)
    log.warning("database unavailable during %s %s: %s", request.method, request.url.path, reason)
    return error_response(
        503,
        "unavailable",
        "the database is unavailable; retry shortly",
        headers={"Retry-After": str(DATABASE_RETRY_SECONDS)},
    )


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """A bug: 500 with no detail for the client. One line here; the traceback is logged once,
    by the server, to which Starlette re-raises the exception after this answer."""
    log.error("unexpected error in %s %s: %s", request.method, request.url.path, first_line(exc))
    return error_response(500, "internal", "an internal error occurred; it has been logged")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ToolReachError, _toolreach_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    for database_trouble in DATABASE_TROUBLE:
        app.add_exception_handler(database_trouble, _database_unavailable)
    app.add_exception_handler(Exception, _unexpected)
