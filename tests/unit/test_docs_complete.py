"""The reference pages stay complete: every setting of app/settings.py is in
docs/CONFIGURATION.md, and every route the app serves is in docs/API.md's table. A setting or
an endpoint added without its line fails here, not in a user's hands."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from starlette.routing import Route

from app.main import create_app
from app.routing import RouterConfig
from app.routing.types import FieldWeights
from app.settings import variable_names

DOCS = Path(__file__).resolve().parents[2] / "docs"
CONFIGURATION = (DOCS / "CONFIGURATION.md").read_text(encoding="utf-8")
API = (DOCS / "API.md").read_text(encoding="utf-8")


def _table_rows(text: str) -> str:
    """The table rows of a page, where each setting and endpoint is given its line."""
    return "\n".join(line for line in text.splitlines() if line.startswith("|"))


def test_every_setting_is_in_configuration_md() -> None:
    rows = _table_rows(CONFIGURATION)
    missing = [
        name for name in variable_names() if name != "TOOLREACH_ROUTER" and f"`{name}`" not in rows
    ]
    assert not missing, f"docs/CONFIGURATION.md has no row for {missing}"


def test_every_router_weight_is_in_configuration_md() -> None:
    section = CONFIGURATION.split("### Router weights", 1)[1].split("\n### ", 1)[0]
    rows = _table_rows(section)
    names = [f.name.upper() for f in dataclasses.fields(RouterConfig) if f.name != "fields"]
    names += [f"FIELDS__{f.name.upper()}" for f in dataclasses.fields(FieldWeights)]
    missing = [name for name in names if not re.search(rf"`{name}`", rows)]
    assert not missing, f"the router weights table has no TOOLREACH_ROUTER__{missing}"


def _served() -> list[tuple[str, str]]:
    """(method, path) of every endpoint of the app's OpenAPI document, and ("", path) of the
    routes outside it (the OpenAPI document itself, its pages, /mcp, the dashboard)."""
    app = create_app()
    served = [
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    ]
    served += [("", route.path) for route in app.routes if isinstance(route, Route)]
    return [*served, ("", "/dashboard")]


def test_every_endpoint_is_in_api_md() -> None:
    rows = _table_rows(API)
    missing = []
    for method, path in _served():
        if method:
            if f"`{method} {path}`" not in rows:
                missing.append(f"{method} {path}")
        elif f"`{path}" not in API:  # the dashboard's pages, /mcp, the OpenAPI document
            missing.append(path)
    assert not missing, f"docs/API.md does not describe {missing}"


def test_the_checks_see_the_endpoints_and_settings_they_check() -> None:
    served = _served()
    assert ("POST", "/v1/call") in served and ("DELETE", "/v1/memory/{name}") in served
    assert ("", "/mcp/{namespace}") in served
    assert "TOOLREACH_GATEWAY_TIMEOUT_SECONDS" in variable_names()
    assert "TOOLREACH_DATABASE_POOL_SIZE" in variable_names()
