"""The gateway and the sources against a misbehaving MCP server (tests/sources/hostile_mcp.py):
one caller's call never ends another's, nothing a caller causes opens the breaker, a flood
of list_changed costs one sync per interval, a huge listing stops at its bounds, and a huge
answer is `response_too_large` for its own call only (issue 27)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient
from mcp import ClientSession
from mcp.types import CallToolResult

from tests.conftest import ADMIN, AGENT, AGENT_KEY
from tests.mcp.conftest import flush_events, served
from tests.mcp.test_sdk_client import session, structured
from tests.sources.conftest import LOOPBACK, PAGED, app_client
from tests.sources.echo_upstream import BASE, EchoUpstream
from tests.sources.hostile_mcp import HostileMcp


def add(client: TestClient, url: str | None, name: str = "hostile", **extra: object) -> dict:
    body = {"name": name, "kind": "mcp", "url": url, **extra}
    response = client.post("/v1/sources", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    return response.json()


def call(client: TestClient, name: str, arguments: dict, **extra: object) -> dict:
    body = {"name": name, "arguments": arguments, **extra}
    response = client.post("/v1/call", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    return response.json()


def batch(client: TestClient, *calls: dict) -> list[dict]:
    response = client.post("/v1/call/batch", json={"calls": list(calls)}, headers=AGENT)
    assert response.status_code == 200, response.text
    return list(response.json()["results"])


def test_one_callers_timeout_never_ends_anothers_call(sqlite_db: str, hostile: HostileMcp) -> None:
    """Before: the short timeout dropped the shared session, and the other caller's call in
    flight failed with `protocol_error "Connection closed"`."""
    with app_client(sqlite_db) as gw:
        add(gw, f"{hostile.url}/mcp")
        patient = {"name": "sleep", "arguments": {"seconds": 1.0}}
        hasty = {"name": "sleep", "arguments": {"seconds": 5}, "timeout_seconds": 0.3}
        done, late = batch(gw, patient, hasty)
        assert done["ok"], done
        assert done["result"]["content"][0]["text"] == "slept 1.0"
        assert late["error"]["code"] == "timeout" and "timeout_seconds" in late["error"]["message"]


def test_nothing_a_caller_causes_opens_the_breaker(sqlite_db: str, hostile: HostileMcp) -> None:
    """Short deadlines and arguments the server refuses (-32602) never count; the server's
    own errors (-32603) and its own timeout do. Before: each counted, and each dropped the
    shared session."""
    with app_client(sqlite_db, gateway_breaker_failures=2, gateway_timeout_seconds=1) as gw:
        add(gw, f"{hostile.url}/mcp")
        for _ in range(3):
            late = call(gw, "sleep", {"seconds": 3}, timeout_seconds=0.2)
            assert late["error"]["code"] == "timeout"
            picky = call(gw, "picky", {"value": "v"})
            assert picky["error"]["code"] == "invalid_arguments"
            assert "refused the arguments" in picky["error"]["message"]
        assert call(gw, "sleep", {"seconds": 0})["ok"]
        own = call(gw, "sleep", {"seconds": 3})  # the source's own timeout: counted...
        assert own["error"]["code"] == "timeout" and own["latency_ms"] < 2900
        assert call(gw, "sleep", {"seconds": 0})["ok"]  # ...and a new session answers
        for _ in range(2):
            assert call(gw, "crash", {})["error"]["code"] == "protocol_error"
        assert call(gw, "sleep", {"seconds": 0})["error"]["code"] == "circuit_open"


def test_a_huge_answer_is_too_large_for_its_own_call_only(
    sqlite_db: str, hostile: HostileMcp
) -> None:
    """Before: a 10 MB tools/call answer (its length declared) ended the transport: that call
    and every other in flight got `protocol_error "Connection closed"`."""
    with app_client(sqlite_db) as gw:
        add(gw, f"{hostile.url}/mcp")
        waiting = {"name": "sleep", "arguments": {"seconds": 1.0}}
        huge = {"name": "big", "arguments": {"size": 10_000_000}}
        done, refused = batch(gw, waiting, huge)
        assert done["ok"], done
        assert refused["error"]["code"] == "response_too_large", refused["error"]
        assert call(gw, "sleep", {"seconds": 0})["ok"]


def test_a_stdio_servers_answer_is_held_to_the_same_bound(sqlite_db: str, tmp_path: Path) -> None:
    tools = [{"name": "alpha", "description": "Echo.", "inputSchema": {"type": "object"}}]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    command = [sys.executable, str(PAGED)]
    with app_client(sqlite_db, gateway_max_response_bytes=65536) as gw:
        add(gw, None, command=command, env={"TOOLS_FILE": str(tmp_path / "tools.json")})
        assert call(gw, "alpha", {"x": "small"})["ok"]
        huge = call(gw, "alpha", {"x": "y" * 100_000})
        assert huge["error"]["code"] == "response_too_large"


def test_a_list_changed_flood_costs_one_sync_per_interval(
    sqlite_db: str, hostile: HostileMcp
) -> None:
    """Before: every notification (debounced 0.2 s) was a full re-sync: 18 in 5 s here,
    293 in 65 s in the issue's probe, for as long as the source existed."""
    with app_client(sqlite_db, source_resync_min_seconds=2) as gw:
        add(gw, f"{hostile.url}/flood")
        before, notified = hostile.lists["/flood"], hostile.notified
        assert call(gw, "sleep", {"seconds": 0})["ok"]  # opens the session: the flood starts
        time.sleep(4)
        syncs = hostile.lists["/flood"] - before
        assert hostile.notified - notified > 100  # a flood it was
        assert 1 <= syncs <= 3, syncs  # at 0.2 s, 2.2 s (and 4.2 s)
        assert gw.delete("/v1/sources/hostile", headers=ADMIN).status_code == 204  # flood ends


def test_a_huge_listing_stops_at_the_first_page_past_a_bound(
    sqlite_db: str, hostile: HostileMcp
) -> None:
    """Before: all 100 pages of 5,000 tools were read and registered (500,000 tools,
    +3.3 GB, 874 s here); this server stops after 3 pages, so a client without bounds
    fails on page 4 instead."""
    hostile.last_page, hostile.pages = 3, 0
    with app_client(sqlite_db) as gw:
        body = {"name": "huge", "kind": "mcp", "url": f"{hostile.url}/huge-list"}
        refused = gw.post("/v1/sources", json=body, headers=ADMIN)
        assert refused.status_code == 502
        assert "more than 5000 tools" in refused.json()["error"]["message"]
        assert hostile.pages == 2  # 5,000, then 10,000: past the bound, no third page
    hostile.pages = 0
    with app_client(sqlite_db, source_max_listing_bytes=300_000) as gw:
        refused = gw.post("/v1/sources", json=body, headers=ADMIN)
        assert "SOURCE_MAX_LISTING_BYTES" in refused.json()["error"]["message"]
        assert hostile.pages == 1
        assert gw.get("/v1/sources", headers=ADMIN).json()["total"] == 0


TEAM_A, TEAM_B = "team-a-agent-key-0123456789", "team-b-agent-key-0123456789"


def mcp_call(base: str, key: str, arguments: dict[str, Any]) -> CallToolResult:
    async def use(client: ClientSession) -> CallToolResult:
        return await client.call_tool("call_tool", arguments)

    return session(f"{base}/mcp", use, key)


def test_mcp_call_tool_answers_bad_arguments_and_keeps_reports_in_scope(
    database_url: str, echo: EchoUpstream
) -> None:
    """Before: a non-ASCII header argument made call_tool a JSON-RPC error with code 0 and
    the raw Python message; team a's call with team b's route_id became team b's report."""
    keys = (AGENT_KEY, f"{TEAM_A}@team-a", f"{TEAM_B}@team-b")
    settings = {"outbound_allowed_networks": LOOPBACK, "source_sync_seconds": 0}
    with (
        served(url=database_url, agent_keys=keys, source_watch=False, **settings) as base,
        httpx.Client(base_url=base, headers=ADMIN, timeout=30) as http,
    ):
        for team in ("team-a", "team-b"):
            document = f"{echo.url}{BASE}/openapi.json"
            body = {"name": team, "namespace": team, "kind": "openapi", "url": document}
            assert http.post("/v1/sources", json=body).status_code == 201
        bad = mcp_call(base, TEAM_A, {"name": "echo_get", "arguments": {"X-Note": "héllo"}})
        answer = structured(bad)
        assert bad.is_error and answer["error"]["code"] == "invalid_arguments"
        assert "'X-Note'" in answer["error"]["message"]
        team_b = {"Authorization": f"Bearer {TEAM_B}"}
        route = http.post("/v1/route", json={"query": "read one file"}, headers=team_b)
        route_id = route.json()["route_id"]
        theirs = {"name": "get_file", "arguments": {"file_id": "1"}, "route_id": route_id}
        assert structured(mcp_call(base, TEAM_A, theirs))["ok"]
        flush_events(base)
        report = {"route_id": route_id, "chosen": "get_file", "outcome": "error"}
        own = http.post("/v1/feedback", json=report, headers=team_b)
        assert own.status_code == 200, own.text
