"""The OpenAPI document as the service is now: the agent endpoints' bearer key is optional
while they are open (no agent key and no scoped key, app/keys/store.py), required otherwise;
every other endpoint that takes a key always requires one."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

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


def install_openapi(app: FastAPI) -> None:
    """``/openapi.json`` says, on each request, whether the agent endpoints are open now:
    agent keys can be made and revoked at run time (``/v1/keys``)."""
    built = app.openapi  # FastAPI's own: builds the document once and keeps it
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
