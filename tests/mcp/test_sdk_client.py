"""/mcp through the official `mcp` SDK's streamable-HTTP client, against a real uvicorn."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, Tool

from tests.conftest import ADMIN_KEY, AGENT, AGENT_KEY
from tests.mcp.conftest import Serve, flush_events

T = TypeVar("T")
Use = Callable[[ClientSession], Awaitable[T]]


def session(url: str, use: Use[T], key: str | None = AGENT_KEY) -> T:
    """Open a client session on ``url`` (initialize included), run ``use`` on it."""

    async def main() -> T:
        headers = {"Authorization": f"Bearer {key}"} if key else None
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            return await use(client)

    return anyio.run(main)


def call(url: str, tool: str, arguments: dict[str, Any], key: str | None = AGENT_KEY) -> Any:
    async def use(client: ClientSession) -> CallToolResult:
        return await client.call_tool(tool, arguments)

    return session(url, use, key)


def structured(result: CallToolResult) -> dict[str, Any]:
    """The structured result, which the text content repeats as JSON."""
    assert isinstance(result.structured_content, dict)
    [text] = result.content
    assert json.loads(text.text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def test_initialize_and_list_the_meta_tools(server: str) -> None:
    async def use(client: ClientSession) -> tuple[Any, list[Tool]]:
        info = await client.initialize()
        return info, (await client.list_tools()).tools

    info, tools = session(f"{server}/mcp", use)
    assert info.server_info.name == "toolreach"
    assert "search_tools" in (info.instructions or "")
    assert [t.name for t in tools] == [
        "search_tools",
        "describe_tool",
        "validate_call",
        "call_tool",
    ]
    schemas = {t.name: t.input_schema for t in tools}
    assert "required" not in schemas["search_tools"]  # query, or queries
    assert {"query", "queries", "split"} <= set(schemas["search_tools"]["properties"])
    assert set(schemas["validate_call"]["properties"]) == {"name", "arguments", "route_id"}
    assert all(t.annotations is not None for t in tools)
    read_only = {t.name: t.annotations.read_only_hint for t in tools if t.annotations}
    assert read_only == {
        "search_tools": True,
        "describe_tool": True,
        "validate_call": True,
        "call_tool": False,
    }


def test_search_tools_answers_with_full_definitions_in_one_call(server: str) -> None:
    query = "show the items and prices of it"
    result = call(f"{server}/mcp", "search_tools", {"query": query, "k": 4})
    assert not result.is_error
    answer = structured(result)
    assert len(answer["route_id"]) == 32 and answer["namespace"] == "default"
    by_name = {tool["name"]: tool for tool in answer["tools"]}
    detail = by_name["get_order_details"]
    assert detail["missing_required"] == ["order_id"]
    assert isinstance(detail["score"], float)
    definition = {k: v for k, v in detail.items() if k not in ("score", "missing_required")}
    Tool.model_validate(definition)
    assert definition["inputSchema"]["required"] == ["order_id"]
    known = {"query": query, "k": 4, "context": {"order_id": "o42"}}
    tools = structured(call(f"{server}/mcp", "search_tools", known))["tools"]
    assert {t["name"]: t for t in tools}["get_order_details"]["missing_required"] == []


def test_a_step_of_several_parts_is_covered_and_says_its_parts(server: str) -> None:
    step = "what is the weather in Paris and show the detail of order o123"
    answer = structured(call(f"{server}/mcp", "search_tools", {"query": step, "k": 2}))
    assert answer["parts"] == ["what is the weather in Paris", "show the detail of order o123"]
    assert {(t["name"], t["part"]) for t in answer["tools"]} == {
        ("get_weather", 0),
        ("get_order_details", 1),
    }
    whole = structured(call(f"{server}/mcp", "search_tools", {"query": step, "split": False}))
    assert "parts" not in whole and all("part" not in t for t in whole["tools"])


def test_several_queries_are_answered_one_result_each(server: str) -> None:
    queries = ["weather in Paris", "show the detail of order o123", "weather in Paris"]
    answer = structured(call(f"{server}/mcp", "search_tools", {"queries": queries, "k": 1}))
    results = answer["results"]
    assert [r["query"] for r in results] == queries
    assert [r["tools"][0]["name"] for r in results] == [
        "get_weather",
        "get_order_details",
        "get_weather",
    ]
    assert len({r["route_id"] for r in results}) == 3  # each a route of its own
    for result in results:
        one = structured(call(f"{server}/mcp", "search_tools", {"query": result["query"], "k": 1}))
        assert one["tools"] == result["tools"]
        assert "inputSchema" in result["tools"][0] and result["namespace"] == "default"


def test_search_is_routed_and_recorded_like_v1_route(server: str) -> None:
    route_id = structured(call(f"{server}/mcp", "search_tools", {"query": "weather in Paris"}))[
        "route_id"
    ]
    checked = call(
        f"{server}/mcp",
        "validate_call",
        {"tool_name": "get_weather", "parameters": {"city": "Paris"}, "route_id": route_id},
    )
    assert structured(checked) == {"valid": True, "errors": [], "did_you_mean": []}
    flush_events(server)  # the validated call is recorded off the request path
    report = {"route_id": route_id, "chosen": "get_weather", "outcome": "success"}
    with httpx.Client(base_url=server, headers=AGENT) as http:
        feedback = http.post("/v1/feedback", json=report)
    assert feedback.status_code == 200, feedback.text
    assert feedback.json()["from_validate"] is True  # validate_call recorded the choice
    assert feedback.json()["verdict"] in ("hit_at_1", "hit_at_k")


def test_validate_call_with_did_you_mean_and_schema_errors(server: str) -> None:
    typo = structured(call(f"{server}/mcp", "validate_call", {"name": "get_wether"}))
    assert typo["valid"] is False and typo["did_you_mean"][0] == "get_weather"
    bad = structured(
        call(f"{server}/mcp", "validate_call", {"name": "get_weather", "arguments": {"city": 5}})
    )
    assert bad["valid"] is False
    assert bad["errors"][0]["path"] == "/city"


def test_describe_tool_and_an_unknown_name(server: str) -> None:
    described = structured(call(f"{server}/mcp", "describe_tool", {"tool_name": "get_weather"}))
    assert described["name"] == "get_weather" and "inputSchema" in described
    unknown = call(f"{server}/mcp", "describe_tool", {"name": "get_wether"})
    assert unknown.is_error
    assert structured(unknown)["did_you_mean"][0] == "get_weather"


def test_wrong_arguments_are_a_tool_error_the_model_can_correct(server: str) -> None:
    for tool, arguments, says in (
        ("search_tools", {}, "give either query (one step) or queries (several)"),
        ("search_tools", {"query": "x", "queries": ["y"]}, "give either query"),
        ("search_tools", {"queries": ["x"] * 17}, "queries: List should have at most 16"),
        ("search_tools", {"queries": []}, "queries: List should have at least 1"),
        ("search_tools", {"query": "x", "split": "no"}, "split: Input should be a valid boolean"),
        ("search_tools", {"query": "x", "limit": 3}, "limit: Extra inputs are not permitted"),
        ("search_tools", {"query": "x", "k": 0}, "k: Input should be greater than or equal"),
        ("validate_call", {"arguments": {}}, "name: Field required"),
    ):
        result = call(f"{server}/mcp", tool, arguments)
        assert result.is_error, (tool, arguments)
        assert says in structured(result)["error"]


def test_an_unknown_tool_is_a_protocol_error(server: str) -> None:
    async def use(client: ClientSession) -> MCPError:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("run_tool", {"name": "get_weather"})
        return caught.value

    error = session(f"{server}/mcp", use)
    assert error.code == INVALID_PARAMS
    assert "unknown tool 'run_tool'" in error.message


def test_call_tool_answers_with_the_gateways_structured_errors(server: str) -> None:
    """call_tool is POST /v1/call: a wrong name gets did-you-mean, bad arguments the schema's
    problem, and a tool with no source the gateway's own error, each as a tool error."""
    wrong = structured(call(f"{server}/mcp", "call_tool", {"tool_name": "get_wether"}))
    assert wrong["ok"] is False and wrong["error"]["code"] == "unknown_tool"
    assert "get_weather" in wrong["error"]["details"]["did_you_mean"]
    bad = structured(call(f"{server}/mcp", "call_tool", {"name": "get_weather", "arguments": {}}))
    assert bad["error"]["code"] == "invalid_arguments"
    arguments = {"name": "get_weather", "parameters": {"city": "Paris"}}
    unsourced = structured(call(f"{server}/mcp", "call_tool", arguments))
    assert unsourced["ok"] is False and unsourced["error"]["code"] not in {
        "unknown_tool",
        "invalid_arguments",
    }


def test_namespace_from_the_path_or_the_key(serve: Serve) -> None:
    with serve(mcp_key_namespaces={ADMIN_KEY: "other"}) as base:
        query = {"query": "check the host answers", "k": 5}
        by_path = structured(call(f"{base}/mcp/other", "search_tools", query))
        assert by_path["namespace"] == "other"
        assert [t["name"] for t in by_path["tools"]] == ["ping"]
        by_key = structured(call(f"{base}/mcp", "search_tools", query, key=ADMIN_KEY))
        assert by_key["namespace"] == "other"
        default = structured(call(f"{base}/mcp", "search_tools", query))
        assert default["namespace"] == "default" and len(default["tools"]) == 4
        path_wins = structured(call(f"{base}/mcp/default", "search_tools", query, key=ADMIN_KEY))
        assert path_wins["namespace"] == "default"


def test_open_when_no_agent_keys_are_set_like_v1(serve: Serve) -> None:
    with serve(agent_keys=()) as base:
        answer = structured(call(f"{base}/mcp", "search_tools", {"query": "weather"}, key=None))
        assert answer["tools"]


SCOPED_KEY = "scoped-agent-key-0123456789"


def test_a_scoped_key_sees_its_namespaces_only_like_v1(serve: Serve) -> None:
    """A key limited to "other" works there with no path, and gets the /v1 404 for "default"
    (the same answer as for a namespace that does not exist)."""
    keys = (AGENT_KEY, f"{SCOPED_KEY}@other")
    with serve(agent_keys=keys) as base:
        query = {"query": "check the host answers", "k": 5}
        own = structured(call(f"{base}/mcp", "search_tools", query, key=SCOPED_KEY))
        assert own["namespace"] == "other" and [t["name"] for t in own["tools"]] == ["ping"]
        headers = {"Authorization": f"Bearer {SCOPED_KEY}", "Accept": "application/json"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        with httpx.Client(base_url=base, headers=headers) as http:
            hidden = http.post("/mcp/default", json=body)
            missing = http.post("/mcp/nowhere", json=body)
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
        # did-you-mean is drawn from the key's own namespaces, for both alike
        said = [r.json()["error"]["message"].split(";")[0] for r in (hidden, missing)]
        assert said[0].replace("default", "X") == said[1].replace("nowhere", "X")
        assert hidden.json()["error"]["details"]["did_you_mean"] == []
