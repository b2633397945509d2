"""A namespace that never held a tool is a 404 that names it, with did-you-mean, on every
surface that names one (issue 28: `{"namespace": "biling"}` answered 200 and nothing). A
namespace whose tools are all gone still exists: its route answers that nothing fits."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.loop_support import services_of
from tests.api.test_errors_auth import assert_error
from tests.conftest import ADMIN, AGENT

TYPO = "biling"
BILLING = [
    {"name": "issue_refund", "description": "Refund part or all of a paid order."},
    {"name": "get_invoice", "description": "The invoice of one order, as a PDF link."},
]
# Every surface that works in one namespace, as (method, path, request keywords, key).
SURFACES: dict[str, tuple[str, str, dict[str, Any], dict[str, str]]] = {
    "route": ("POST", "/v1/route", {"json": {"query": "refund", "namespace": TYPO}}, AGENT),
    "route, OpenAI tool search": (
        "POST",
        "/v1/route",
        {
            "json": {
                "query": "refund",
                "namespace": TYPO,
                "format": "openai_tool_search",
                "call_id": "c",
            }
        },
        AGENT,
    ),
    "route, Anthropic tool reference": (
        "POST",
        "/v1/route",
        {"json": {"query": "refund", "namespace": TYPO, "format": "anthropic_tool_reference"}},
        AGENT,
    ),
    "validate": (
        "POST",
        "/v1/validate",
        {"json": {"name": "issue_refund", "namespace": TYPO}},
        AGENT,
    ),
    "call": ("POST", "/v1/call", {"json": {"name": "issue_refund", "namespace": TYPO}}, AGENT),
    "call batch": (
        "POST",
        "/v1/call/batch",
        {"json": {"calls": [{"name": "issue_refund", "namespace": TYPO}]}},
        AGENT,
    ),
    "tools": ("GET", "/v1/tools", {"params": {"namespace": TYPO}}, AGENT),
    "tools, deferred export": (
        "GET",
        "/v1/tools",
        {"params": {"namespace": TYPO, "format": "anthropic", "defer_loading": "true"}},
        AGENT,
    ),
    "stats": ("GET", "/v1/stats", {"params": {"namespace": TYPO}}, ADMIN),
    "lookalikes": ("GET", "/v1/lookalikes", {"params": {"namespace": TYPO}}, ADMIN),
    "mcp path": (
        "POST",
        f"/mcp/{TYPO}",
        {"json": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
        AGENT,
    ),
}


@pytest.fixture
def billing(client: TestClient) -> TestClient:
    body = {"tools": BILLING, "namespace": "billing"}
    assert client.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
    return client


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_a_typo_namespace_is_a_404_that_names_it(billing: TestClient, surface: str) -> None:
    method, path, kwargs, key = SURFACES[surface]
    headers = {**key, "Accept": "application/json, text/event-stream", "Host": "localhost"}
    response = billing.request(method, path, headers=headers, **kwargs)
    assert_error(response, 404, "not_found")
    error = response.json()["error"]
    assert error["message"] == "no tools in namespace 'biling'; did you mean 'billing'?"
    assert error["details"] == {"namespace": TYPO, "did_you_mean": ["billing"]}


def test_the_same_namespace_spelt_right_answers(billing: TestClient) -> None:
    routed = billing.post(
        "/v1/route", json={"query": "refund an order", "namespace": "billing"}, headers=AGENT
    )
    assert routed.status_code == 200 and routed.json()["candidates"][0]["name"] == "issue_refund"
    listed = billing.get("/v1/tools", params={"namespace": "billing"}, headers=AGENT)
    assert listed.status_code == 200 and listed.json()["total"] == 2
    assert billing.get("/v1/stats", params={"namespace": "billing"}, headers=ADMIN).is_success


def test_a_namespace_whose_tools_are_gone_still_exists(billing: TestClient) -> None:
    for tool in BILLING:
        gone = billing.delete(f"/v1/tools/{tool['name']}?namespace=billing", headers=ADMIN)
        assert gone.status_code == 204
    body = {"query": "refund an order", "namespace": "billing", "format": "openai"}
    routed = billing.post("/v1/route", json=body, headers=AGENT)
    assert routed.status_code == 200, routed.text
    assert routed.json()["candidates"] == [] and routed.json()["tools"] == []
    listed = billing.get("/v1/tools", params={"namespace": "billing"}, headers=AGENT)
    assert listed.status_code == 200 and listed.json()["total"] == 0
    services_of(billing).events.flush()  # the route's event, written in the background
    stats = billing.get("/v1/stats", params={"namespace": "billing"}, headers=ADMIN)
    assert stats.status_code == 200 and stats.json()["routes"] >= 1
    # ... and a typo of it is still offered the real name
    typo = billing.post("/v1/route", json={**body, "namespace": TYPO}, headers=AGENT)
    assert typo.json()["error"]["details"]["did_you_mean"] == ["billing"]


def test_mcp_without_a_path_says_so_in_the_tool_answer(billing: TestClient) -> None:
    """/mcp serves `default` here, which holds no tool: the MCP connection works (the
    meta-tools are listed), and a search is a tool error naming the namespace."""
    headers = {**AGENT, "Accept": "application/json, text/event-stream", "Host": "localhost"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert billing.post("/mcp", json=listing, headers=headers).status_code == 200
    search = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": "refund"}},
    }
    answer = billing.post("/mcp", json=search, headers=headers).json()["result"]
    assert answer["isError"] is True
    assert answer["structuredContent"] == {
        "error": "no tools in namespace 'default'",
        "code": "not_found",
        "namespace": "default",
        "did_you_mean": [],
    }
