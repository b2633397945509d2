"""/mcp at the HTTP level: the same keys as /v1, the Host and Origin checks, stateless JSON."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.test_errors_auth import assert_error
from tests.conftest import AGENT, AGENT_KEY
from tests.mcp.conftest import Serve

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
DASHBOARD_KEY = "test-dashboard-key-0123456789"


def post(base: str, body: dict[str, Any], path: str = "/mcp", **headers: str) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, headers={**HEADERS, **headers}, timeout=30)


def test_stateless_json_answers(server: str) -> None:
    response = post(server, INITIALIZE, **AGENT)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in response.headers  # no session: any replica may answer
    listed = post(server, LIST, **AGENT)  # no initialize on this "connection": stateless
    assert [t["name"] for t in listed.json()["result"]["tools"]] == [
        "search_tools",
        "describe_tool",
        "validate_call",
        "call_tool",
    ]


def test_the_same_keys_as_v1(serve: Serve) -> None:
    with serve(dashboard_keys=(DASHBOARD_KEY,)) as base:
        assert_error(post(base, LIST), 401, "unauthorized")
        assert post(base, LIST).headers["www-authenticate"] == "Bearer"
        wrong = post(base, LIST, Authorization="Bearer not-a-real-key-at-all")
        assert_error(wrong, 401, "unauthorized")
        viewer = post(base, LIST, Authorization=f"Bearer {DASHBOARD_KEY}")
        assert_error(viewer, 403, "forbidden")
        assert_error(post(base, LIST, path="/mcp/other"), 401, "unauthorized")
        assert post(base, LIST, **AGENT).status_code == 200


def test_a_bad_namespace_in_the_path(server: str) -> None:
    assert_error(post(server, LIST, path="/mcp/a%20b", **AGENT), 404, "not_found")
    unknown = post(server, LIST, path="/mcp/nobody", **AGENT)  # a namespace with no tool ever
    assert_error(unknown, 404, "not_found")
    assert unknown.json()["error"]["message"].startswith("no tools in namespace 'nobody'")


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example"}, 421),
        ({"Host": "evil.example:80"}, 421),
        ({"Origin": "http://evil.example"}, 403),
        ({"Host": "localhost"}, 200),
        ({"Origin": "http://localhost:3000"}, 200),
    ],
)
def test_local_hosts_only_by_default(server: str, headers: dict[str, str], status: int) -> None:
    assert post(server, LIST, **AGENT, **headers).status_code == status


def test_a_real_hostname_once_allowed(serve: Serve) -> None:
    hosts = ("toolreach.example.com", "toolreach.example.com:*")
    origins = ("https://app.example.com",)
    with serve(mcp_allowed_hosts=hosts, mcp_allowed_origins=origins) as base:
        named = {"Host": "toolreach.example.com"}
        assert post(base, LIST, **AGENT, **named).status_code == 200
        assert post(base, LIST, **AGENT, Host="toolreach.example.com:8443").status_code == 200
        assert post(base, LIST, **AGENT).status_code == 421  # 127.0.0.1 is no longer listed
        browser = {**named, "Origin": "https://app.example.com"}
        assert post(base, LIST, **AGENT, **browser).status_code == 200
    with serve(mcp_allowed_hosts=("*",)) as base:  # a proxy in front checks Host
        assert post(base, LIST, **AGENT, Host="anything.example").status_code == 200


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_post_only_no_stream_to_hold_open(server: str, method: str) -> None:
    auth = {"Authorization": f"Bearer {AGENT_KEY}"}
    response = httpx.request(method, f"{server}/mcp", headers={**HEADERS, **auth}, timeout=10)
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"
    assert_error(httpx.request(method, f"{server}/mcp", headers=HEADERS), 401, "unauthorized")
