"""The OpenAPI document as the service is: the errors every endpoint can answer, and the
agent endpoints' bearer key optional while they are open (no agent key and no scoped key,
app/keys/store.py), required otherwise; every other endpoint that takes a key always
requires one."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from app.api.error_handlers import ERROR_SHAPE
from app.deps import require_agent

# OpenAPI's way to say "no key, or this key": an empty requirement is one that is always met.
OPTIONAL_KEY: list[dict[str, list[str]]] = [{}, {"HTTPBearer": []}]


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for dependency in dependant.dependencies:
        if dependency.call is not None:
            yield dependency.call
        yield from _calls(dependency)


def api_routes(routes: Iterable[BaseRoute]) -> Iterator[APIRoute]:
    """Every endpoint, also inside included routers (FastAPI keeps those as one route each)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from api_routes(included.routes)
        elif isinstance(route, APIRoute):
            yield route


def agent_operations(app: FastAPI) -> set[tuple[str, str]]:
    """(path, method) of every operation an agent key opens (those of ``require_agent``)."""
    return {
        (route.path, method.lower())
        for route in api_routes(app.routes)
        if require_agent in set(_calls(route.dependant))
        for method in route.methods or ()
    }


def with_optional_agent_key(document: dict[str, Any], operations: set[tuple[str, str]]) -> dict:
    """A copy of ``document`` whose agent operations take the key as optional."""
    opened = copy.deepcopy(document)
    for path, method in operations:
        operation = opened.get("paths", {}).get(path, {}).get(method)
        if operation is not None and "security" in operation:
            operation["security"] = copy.deepcopy(OPTIONAL_KEY)
    return opened


# Answered before any route runs, so no endpoint declares them itself: a body that is not
# JSON (400) or too large (413) wherever a body is read, a URL over its limit (414) anywhere.
BODY_ERRORS = ("400", "413")
URL_ERRORS = ("414",)


def with_common_errors(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the errors the middlewares and body parsing answer, on every
    operation that can get them (found by schema fuzzing: a 400 on POST /v1/keys)."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            codes = URL_ERRORS + (BODY_ERRORS if "requestBody" in operation else ())
            for code in codes:
                responses.setdefault(code, copy.deepcopy(ERROR_SHAPE))
    return document


def install_openapi(app: FastAPI) -> None:
    """``/openapi.json`` says, on each request, whether the agent endpoints are open now:
    agent keys can be made and revoked at run time (``/v1/keys``)."""
    fastapi_openapi = app.openapi  # FastAPI's own: builds the document once and keeps it
    completed: dict[str, Any] = {}

    def built() -> dict[str, Any]:
        if not completed:
            completed.update(with_common_errors(fastapi_openapi()))
        return completed

    opened: dict[str, Any] = {}  # the document with the agent key optional, made once

    def openapi() -> dict[str, Any]:
        document = built()
        services = getattr(app.state, "services", None)
        if services is None or not services.keys.open_to_anonymous:
            return document
        if not opened:
            opened.update(with_optional_agent_key(document, agent_operations(app)))
        return opened

    app.openapi = openapi  # type: ignore[method-assign]
