"""The platforms' own tool search as route formats, the deferred export, and MCP's title and
annotations through import and export; every shape checked with the platform SDK's types."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ToolParam, ToolReferenceBlockParam
from fastapi.testclient import TestClient
from mcp.types import Tool as MCPTool
from openai.types.responses import (
    FunctionToolParam,
    NamespaceToolParam,
    ResponseToolSearchOutputItemParamParam,
)
from openai.types.responses.namespace_tool_param import ToolFunction as NamespaceFunction
from pydantic import ConfigDict, TypeAdapter

from tests.api.test_errors_auth import assert_error
from tests.api.test_route import TOOLS, route
from tests.conftest import ADMIN, AGENT

FORBID = ConfigDict(extra="forbid")
MCP_TOOL = {
    "name": "delete_file",
    "title": "Delete a file",
    "description": "Delete one file by path. Cannot be undone.",
    "inputSchema": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
    "outputSchema": {"type": "object", "properties": {"deleted": {"type": "boolean"}}},
    "annotations": {"destructiveHint": True, "idempotentHint": True, "readOnlyHint": False},
}


def valid_list(item_type: Any, items: list[dict[str, Any]]) -> None:
    adapter = TypeAdapter(list[item_type], config=FORBID)
    assert adapter.validate_python(items) == items


def valid_namespaces(items: list[dict[str, Any]]) -> None:
    """OpenAI namespace tools: the outer shape by the SDK's type (its ``tools`` is a lazy
    Iterable, which passes anything), then each function by the type of a namespace's."""
    TypeAdapter(list[NamespaceToolParam], config=FORBID).validate_python(items)
    for group in items:
        assert set(group) == {"type", "name", "description", "tools"}
        valid_list(NamespaceFunction, group["tools"])


@pytest.fixture
def routed(client: TestClient) -> TestClient:
    tools = [*TOOLS, {"name": "billing:refund.v2", "description": "Refund an invoice."}]
    response = client.post("/v1/tools/bulk", json={"tools": tools}, headers=ADMIN)
    assert response.status_code == 200, response.text
    return client


def test_openai_responses_format(routed: TestClient) -> None:
    answer = route(routed, query="weather in Paris", k=2, format="openai_responses")
    valid_list(FunctionToolParam, answer["tools"])
    assert [t["name"] for t in answer["tools"]] == [c["name"] for c in answer["candidates"]]
    assert 0 < answer["tokens"]["returned"] < answer["tokens"]["namespace_total"]


def test_openai_tool_search_answers_the_call(routed: TestClient) -> None:
    answer = route(
        routed, query="refund the invoice", k=2, format="openai_tool_search", call_id="call_7"
    )
    [item] = answer["tools"]
    valid_list(FunctionToolParam, item["tools"])
    TypeAdapter(list[ResponseToolSearchOutputItemParamParam]).validate_python(answer["tools"])
    assert (item["type"], item["call_id"], item["execution"]) == (
        "tool_search_output",
        "call_7",
        "client",
    )
    exported = item["tools"][0]["name"]  # OpenAI refuses ':' and '.' in a name
    assert answer["tool_names"] == {exported: "billing:refund.v2"}
    plain = route(routed, query="refund the invoice", k=2, format="openai_responses")
    assert answer["tokens"] == plain["tokens"]  # the definitions the search loads


def test_anthropic_tool_reference_format(routed: TestClient) -> None:
    answer = route(routed, query="refund the invoice", k=2, format="anthropic_tool_reference")
    valid_list(ToolReferenceBlockParam, answer["tools"])
    names = [b["tool_name"] for b in answer["tools"]]
    assert names[0] == next(iter(answer["tool_names"]))  # the name the deferred tool has
    export = routed.get(
        "/v1/tools", params={"format": "anthropic", "defer_loading": "true"}, headers=AGENT
    ).json()
    assert set(names) <= {tool["name"] for tool in export["items"]}


def test_tool_search_in_an_empty_namespace_still_answers_the_call(client: TestClient) -> None:
    """A namespace whose tools are gone answers the search with nothing found; one that
    never held a tool is the 404 of every surface, in the search shapes too."""
    card = {"name": "gone", "description": "Soon deleted.", "namespace": "emptied"}
    assert client.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
    assert client.delete("/v1/tools/gone?namespace=emptied", headers=ADMIN).status_code == 204
    search = {"query": "x", "namespace": "emptied"}
    answer = route(client, **search, format="openai_tool_search", call_id="c1")
    assert answer["tools"] == [
        {"type": "tool_search_output", "call_id": "c1", "execution": "client", "tools": []}
    ]
    assert route(client, **search, format="anthropic_tool_reference")["tools"] == []
    for fmt in ({"format": "openai_tool_search", "call_id": "c1"}, {"format": "anthropic"}):
        body = {"query": "x", "namespace": "emptyed", **fmt}
        unknown = client.post("/v1/route", json=body, headers=AGENT)
        assert_error(unknown, 404, "not_found")
        assert unknown.json()["error"]["details"]["did_you_mean"] == ["emptied"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"format": "openai_tool_search"}, "needs the tool_search_call's call_id"),
        ({"format": "openai_responses", "call_id": "c"}, "only allowed with format"),
        ({"call_id": "c"}, "only allowed with format"),
        ({"format": "openai_tool_search", "call_id": ""}, "at least 1 character"),
    ],
)
def test_call_id_goes_with_openai_tool_search(
    client: TestClient, body: dict[str, Any], says: str
) -> None:
    response = client.post("/v1/route", json={"query": "x", **body}, headers=AGENT)
    assert_error(response, 422, "invalid_input")
    assert says in response.text


def test_deferred_export_of_a_whole_namespace_is_paged(routed: TestClient) -> None:
    seen: list[dict[str, Any]] = []
    for offset in (0, 2, 4):
        page = routed.get(
            "/v1/tools",
            params={
                "format": "openai_responses",
                "defer_loading": "true",
                "namespace": "default",
                "limit": 2,
                "offset": offset,
            },
            headers=AGENT,
        ).json()
        assert page["total"] == len(TOOLS) + 1 and page["format"] == "openai_responses"
        valid_namespaces(page["items"])  # each page groups its own cards
        seen += [function for group in page["items"] for function in group["tools"]]
    assert len(seen) == len(TOOLS) + 1
    valid_list(NamespaceFunction, seen)
    assert all(tool["defer_loading"] is True for tool in seen)
    anthropic = routed.get(
        "/v1/tools", params={"format": "anthropic", "defer_loading": "true"}, headers=AGENT
    ).json()["items"]
    valid_list(ToolParam, anthropic)
    assert all(tool["defer_loading"] is True for tool in anthropic)


@pytest.mark.parametrize("fmt", [None, "mcp", "openai"])
def test_defer_loading_needs_a_platform_that_has_it(client: TestClient, fmt: str | None) -> None:
    params = {"defer_loading": "true", **({"format": fmt} if fmt else {})}
    response = client.get("/v1/tools", params=params, headers=AGENT)
    assert_error(response, 422, "invalid_input")
    assert "anthropic" in response.text and "openai_responses" in response.text


def test_mcp_title_annotations_and_output_schema_survive(client: TestClient) -> None:
    imported = client.post("/v1/tools/bulk", json={"tools": [MCP_TOOL]}, headers=ADMIN)
    assert imported.status_code == 200, imported.text
    native = client.get("/v1/tools/delete_file", headers=AGENT).json()
    assert native["title"] == "Delete a file"
    assert native["annotations"] == MCP_TOOL["annotations"]
    exported = client.get("/v1/tools/delete_file", params={"format": "mcp"}, headers=AGENT)
    assert exported.json() == MCP_TOOL
    MCPTool.model_validate(exported.json())
    again = client.post("/v1/tools/bulk", json={"tools": [MCP_TOOL]}, headers=ADMIN).json()
    assert again["unchanged"] == ["delete_file"]  # the same content hashes the same
    answer = route(client, query="delete the file", k=1, format="mcp")
    assert answer["tools"] == [MCP_TOOL]


def test_deferred_openai_functions_are_grouped_in_namespace_tools(client: TestClient) -> None:
    """OpenAI's tool search keeps a deferred schema out of the request only inside a
    `namespace` tool (langchain PR #38573; its guide: fewer than 10 functions in each)."""
    weather = [
        {"name": f"weather_tool_{i:02}", "description": f"Weather tool {i}.", "tags": ["weather"]}
        for i in range(12)
    ]
    plain = [{"name": "billing:refund.v2", "description": "Refund an invoice."}]
    body = {"tools": [*weather, *plain], "namespace": "shop"}
    assert client.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
    params = {"namespace": "shop", "format": "openai_responses", "defer_loading": "true"}
    page = client.get("/v1/tools", params={**params, "limit": 500}, headers=AGENT).json()
    groups = page["items"]
    valid_namespaces(groups)
    for group in groups:
        assert 1 <= len(group["tools"]) < 10
        assert all(f["defer_loading"] is True for f in group["tools"])
        assert all(f["name"] in group["description"] for f in group["tools"])
        assert "defer_loading" not in group  # it applies to the functions, not the namespace
    assert [(g["name"], len(g["tools"])) for g in groups] == [
        ("shop", 1),
        ("weather", 9),
        ("weather_2", 3),
    ]
    assert groups[0]["tools"][0]["name"] == "billing_refund_v2_be8ed0c6"  # exported, as routed
    assert page["total"] == 13
    anthropic = client.get(
        "/v1/tools", params={**params, "format": "anthropic"}, headers=AGENT
    ).json()["items"]
    valid_list(ToolParam, anthropic)  # Anthropic's search takes them flat
    assert all(t["defer_loading"] is True for t in anthropic)
