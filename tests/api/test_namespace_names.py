"""One rule for a namespace's name wherever a request names one (registry/card.py's
NAMESPACE_PATTERN): '.' and '..', path segments a client resolves away, are refused with a 422
in the error shape on every surface, as on a card."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.test_errors_auth import assert_error
from tests.conftest import ADMIN

BAD = ["..", ".", ".hidden", "a/b", "x" * 65]

# Every request that names a namespace: (method, path, keyword arguments of the request).
SURFACES: dict[str, Any] = {
    "route": lambda ns: ("POST", "/v1/route", {"json": {"query": "weather", "namespace": ns}}),
    "validate": lambda ns: ("POST", "/v1/validate", {"json": {"name": "x", "namespace": ns}}),
    "search": lambda ns: ("GET", "/v1/tools", {"params": {"namespace": ns}}),
    "read": lambda ns: ("GET", "/v1/tools/x", {"params": {"namespace": ns}}),
    "delete": lambda ns: ("DELETE", "/v1/tools/x", {"params": {"namespace": ns}}),
    "create": lambda ns: (
        "POST",
        "/v1/tools",
        {"json": {"name": "x", "description": "X.", "namespace": ns}},
    ),
    "create_query": lambda ns: (
        "POST",
        "/v1/tools",
        {"json": {"name": "x", "description": "X."}, "params": {"namespace": ns}},
    ),
    "bulk": lambda ns: ("POST", "/v1/tools/bulk", {"json": {"tools": [], "namespace": ns}}),
    "stats": lambda ns: ("GET", "/v1/stats", {"params": {"namespace": ns}}),
    "lookalikes": lambda ns: ("GET", "/v1/lookalikes", {"params": {"namespace": ns}}),
    "key_scope": lambda ns: ("POST", "/v1/keys", {"json": {"role": "agent", "namespaces": [ns]}}),
    "sources": lambda ns: ("GET", "/v1/sources", {"params": {"namespace": ns}}),
    "call": lambda ns: ("POST", "/v1/call", {"json": {"name": "x", "namespace": ns}}),
}


@pytest.mark.parametrize("surface", sorted(SURFACES))
@pytest.mark.parametrize("namespace", BAD)
def test_a_bad_namespace_name_is_refused_everywhere(
    client: TestClient, surface: str, namespace: str
) -> None:
    method, path, kwargs = SURFACES[surface](namespace)
    response = client.request(method, path, headers=ADMIN, **kwargs)
    assert_error(response, 422, "invalid_input")


@pytest.mark.parametrize("namespace", ["default", "team.billing", "a..b", "_x", "x" * 64])
def test_names_with_inner_dots_stay_namespaces(client: TestClient, namespace: str) -> None:
    card = {"name": "get_weather", "description": "The weather now.", "namespace": namespace}
    assert client.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
    body = {"query": "weather", "namespace": namespace}
    routed = client.post("/v1/route", json=body, headers=ADMIN)
    assert routed.status_code == 200 and routed.json()["namespace"] == namespace


def test_mcp_refuses_a_dot_namespace_in_its_path(client: TestClient) -> None:
    response = client.post("/mcp/.hidden", json={}, headers=ADMIN)
    assert_error(response, 404, "not_found")
