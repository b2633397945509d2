"""The registry's admin API against real databases (Postgres and SQLite)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

from tests.conftest import ADMIN, AGENT


def weather_card(**overrides: Any) -> dict[str, Any]:
    card: dict[str, Any] = {
        "name": "get_weather",
        "description": "Current weather for a city. Use it for now, not for forecasts.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
        "tags": ["weather"],
        "errors": [{"code": "CITY_NOT_FOUND", "meaning": "unknown city", "suggestion": "check it"}],
    }
    card.update(overrides)
    return card


def test_create_then_read(client: TestClient) -> None:
    created = client.post("/v1/tools", json=weather_card(), headers=ADMIN)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["version"] == 1
    assert body["namespace"] == "default"
    assert body["summary"] == "Current weather for a city."
    read = client.get("/v1/tools/get_weather", headers=AGENT)
    assert read.status_code == 200
    assert read.json()["parameters"]["required"] == ["city"]


def test_only_name_and_description_are_required(client: TestClient) -> None:
    response = client.post(
        "/v1/tools", json={"name": "ping", "description": "Checks liveness."}, headers=ADMIN
    )
    assert response.status_code == 201, response.text
    assert response.json()["parameters"] == {"type": "object", "properties": {}}


def test_create_twice_conflicts(client: TestClient) -> None:
    assert client.post("/v1/tools", json=weather_card(), headers=ADMIN).status_code == 201
    again = client.post("/v1/tools", json=weather_card(), headers=ADMIN)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "conflict"


def test_same_name_in_two_namespaces(client: TestClient) -> None:
    assert client.post("/v1/tools", json=weather_card(), headers=ADMIN).status_code == 201
    other = client.post("/v1/tools", json=weather_card(namespace="team-b"), headers=ADMIN)
    assert other.status_code == 201
    assert client.get("/v1/tools?namespace=team-b", headers=AGENT).json()["total"] == 1


def test_put_versions_and_history(client: TestClient) -> None:
    first = client.put("/v1/tools/get_weather", json=weather_card(), headers=ADMIN)
    assert first.status_code == 201
    same = client.put("/v1/tools/get_weather", json=weather_card(), headers=ADMIN)
    assert same.status_code == 200 and same.json()["version"] == 1  # unchanged: no new version
    changed = client.put(
        "/v1/tools/get_weather",
        json=weather_card(description="Weather now. Not forecasts."),
        headers=ADMIN,
    )
    assert changed.json()["version"] == 2
    old = client.get("/v1/tools/get_weather?version=1", headers=AGENT).json()
    assert old["description"].startswith("Current weather")
    assert client.get("/v1/tools/get_weather?version=3", headers=AGENT).status_code == 404


def test_put_name_mismatch(client: TestClient) -> None:
    response = client.put("/v1/tools/other", json=weather_card(), headers=ADMIN)
    assert response.status_code == 422
    assert "path names" in response.json()["error"]["message"]


def test_delete_leaves_routing_keeps_history(client: TestClient) -> None:
    client.post("/v1/tools", json=weather_card(), headers=ADMIN)
    assert client.delete("/v1/tools/get_weather", headers=ADMIN).status_code == 204
    assert client.get("/v1/tools/get_weather", headers=AGENT).status_code == 404
    assert client.get("/v1/tools", headers=AGENT).json()["total"] == 0
    history = client.get("/v1/tools/get_weather?version=1", headers=AGENT)
    assert history.status_code == 200
    assert history.json()["deleted"] is True
    assert client.delete("/v1/tools/get_weather", headers=ADMIN).status_code == 404
    back = client.put("/v1/tools/get_weather", json=weather_card(), headers=ADMIN)
    assert back.status_code == 201 and back.json()["version"] == 2


def test_list_filters_and_pages(client: TestClient) -> None:
    tools = [
        weather_card(name=f"tool_{i:02d}", tags=["even" if i % 2 else "odd"]) for i in range(7)
    ]
    assert client.post("/v1/tools/bulk", json={"tools": tools}, headers=ADMIN).status_code == 200
    page = client.get("/v1/tools?limit=3&offset=3", headers=AGENT).json()
    assert page["total"] == 7
    assert [t["name"] for t in page["items"]] == ["tool_03", "tool_04", "tool_05"]
    assert client.get("/v1/tools?tag=odd", headers=AGENT).json()["total"] == 4
    assert client.get("/v1/tools?text=TOOL_06", headers=AGENT).json()["total"] == 1

    # '_' and '%' are characters to find, not LIKE wildcards (each matched every tool)
    def total(**filters: str) -> int:
        return int(client.get("/v1/tools", params=filters, headers=AGENT).json()["total"])

    assert total(text="l_0") == 7
    assert total(text="o_l") == total(text="%") == total(text="tool%06") == 0
    assert total(tag="_") == total(tag="%") == total(tag="o%") == 0
    assert total(tag="ODD") == 4  # any case, as a route's tags filter
    across = client.get("/v1/tools", params={"tag": "odd|even"}, headers=AGENT)
    assert across.status_code == 422  # '|' would match across two tags
    piped = client.post("/v1/tools", json=weather_card(name="p", tags=["a|b"]), headers=ADMIN)
    assert piped.status_code == 422 and "may not contain '|'" in piped.text
    assert client.get("/v1/tools?limit=0", headers=AGENT).status_code == 422
    assert client.get("/v1/tools?offset=2147483647", headers=AGENT).json()["items"] == []
    past = client.get(f"/v1/tools?offset={2**85}", headers=AGENT)  # was a 500 on SQLite
    assert past.status_code == 422 and past.json()["error"]["code"] == "invalid_input"
    client.post("/v1/tools", json=weather_card(), headers=ADMIN)
    last = client.get("/v1/tools/get_weather?version=2147483647", headers=AGENT)
    assert last.status_code == 404
    beyond = client.get("/v1/tools/get_weather?version=2147483648", headers=AGENT)
    assert beyond.status_code == 422  # was a 500 on Postgres


def test_bulk_mixed_formats(client: TestClient) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tools = [
        weather_card(),
        {
            "type": "function",
            "function": {"name": "oa", "description": "OpenAI one.", "parameters": schema},
        },
        {"name": "an", "description": "Anthropic one.", "input_schema": schema},
        {"name": "mc", "description": "MCP one.", "inputSchema": schema},
    ]
    response = client.post(
        "/v1/tools/bulk", json={"tools": tools, "namespace": "mix"}, headers=ADMIN
    )
    assert response.status_code == 200, response.text
    assert sorted(response.json()["created"]) == ["an", "get_weather", "mc", "oa"]
    assert client.get("/v1/tools/an?namespace=mix", headers=AGENT).json()["parameters"] == schema
    again = client.post("/v1/tools/bulk", json={"tools": tools, "namespace": "mix"}, headers=ADMIN)
    assert sorted(again.json()["unchanged"]) == ["an", "get_weather", "mc", "oa"]


def test_bulk_with_one_bad_item_writes_nothing(client: TestClient) -> None:
    bad = weather_card(name="broken", parameters={"type": "object", "required": ["nope"]})
    tools = [weather_card(name="good_one"), bad, weather_card(name="good_two")]
    response = client.post("/v1/tools/bulk", json={"tools": tools}, headers=ADMIN)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_input"
    assert [d["index"] for d in error["details"]] == [1]
    assert error["details"][0]["name"] == "broken"
    assert "nope" in str(error["details"][0]["problems"])
    assert client.get("/v1/tools", headers=AGENT).json()["total"] == 0


def test_bulk_duplicate_names_in_batch(client: TestClient) -> None:
    response = client.post(
        "/v1/tools/bulk", json={"tools": [weather_card(), weather_card()]}, headers=ADMIN
    )
    assert response.status_code == 422
    assert "duplicate" in str(response.json()["error"]["details"])


def test_export_formats(client: TestClient) -> None:
    client.post("/v1/tools", json=weather_card(), headers=ADMIN)
    openai = client.get("/v1/tools?format=openai", headers=AGENT).json()["items"][0]
    assert openai["type"] == "function"
    assert openai["function"]["name"] == "get_weather"
    assert openai["function"]["parameters"]["required"] == ["city"]
    anthropic = client.get("/v1/tools/get_weather?format=anthropic", headers=AGENT).json()
    assert anthropic["input_schema"]["required"] == ["city"]
    mcp = client.get("/v1/tools/get_weather?format=mcp", headers=AGENT).json()
    assert mcp["inputSchema"]["required"] == ["city"]
    assert client.get("/v1/tools?format=xml", headers=AGENT).status_code == 422


def test_format_native_answers_the_native_card_as_no_format_does(client: TestClient) -> None:
    """The docs promise ``format=native`` (a backup keeps every name as it is); it was a 422."""
    card = weather_card(name="billing:refund.v2")  # a name other formats would change
    assert client.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
    for path in ("/v1/tools", "/v1/tools/billing:refund.v2"):
        plain = client.get(path, headers=AGENT)
        native = client.get(path, params={"format": "native"}, headers=AGENT)
        assert native.status_code == 200, native.text
        assert native.json() == plain.json()
    one = client.get("/v1/tools/billing:refund.v2?format=native", headers=AGENT).json()
    assert one["name"] == "billing:refund.v2" and one["version"] == 1
    page = client.get("/v1/tools?format=native", headers=AGENT).json()
    assert page["format"] == "native" and page["items"][0]["name"] == "billing:refund.v2"
    assert client.get("/v1/tools/billing:refund.v2?format=xml", headers=AGENT).status_code == 422


def test_round_trip_through_each_format(client: TestClient) -> None:
    client.post("/v1/tools", json=weather_card(), headers=ADMIN)
    for fmt in ("openai", "anthropic", "mcp"):
        exported = client.get(f"/v1/tools/get_weather?format={fmt}", headers=AGENT).json()
        put = client.put(f"/v1/tools/get_weather?namespace={fmt}", json=exported, headers=ADMIN)
        assert put.status_code == 201, put.text
        assert put.json()["parameters"] == weather_card()["parameters"]


def test_the_openapi_examples_of_tool_bodies_are_valid_cards(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    single = schema["paths"]["/v1/tools"]["post"]["requestBody"]["content"]["application/json"]
    bulk = schema["components"]["schemas"]["BulkRequest"]["properties"]["tools"]
    assert "OpenAI, Anthropic or MCP" in bulk["description"]
    (card,) = single["schema"]["examples"]
    created = client.post("/v1/tools", json=card, headers=ADMIN)
    assert created.status_code == 201, created.text
    answer = client.post(
        "/v1/tools/bulk", json={"tools": bulk["examples"][0], "namespace": "bulk"}, headers=ADMIN
    )
    assert answer.status_code == 200, answer.text
    assert sorted(answer.json()["created"]) == ["get_weather", "send_email"]


def published_tool_schema(client: TestClient, *where: str) -> Draft202012Validator:
    """A validator for the JSON Schema the OpenAPI document gives at ``where`` (its $refs
    resolved against the document itself)."""
    document = client.get("/openapi.json").json()
    node: Any = document
    for key in where:
        node = node[key]
    return Draft202012Validator({**document, **node})


def test_the_openapi_document_describes_each_tool_format(client: TestClient) -> None:
    bulk_item = published_tool_schema(
        client, "components", "schemas", "BulkRequest", "properties", "tools", "items"
    )
    single = published_tool_schema(
        client, "paths", "/v1/tools", "post", "requestBody", "content", "application/json", "schema"
    )
    client.post("/v1/tools", json=weather_card(), headers=ADMIN)
    exported = [
        client.get(f"/v1/tools/get_weather?format={fmt}", headers=AGENT).json()
        for fmt in ("openai", "anthropic", "mcp")
    ]
    flat = {"type": "function", **exported[0]["function"]}  # the Responses API's flat form
    for tool in [weather_card(), flat, *exported]:
        assert bulk_item.is_valid(tool) and single.is_valid(tool), tool
    for not_a_tool in (
        {"function": {"name": "x", "description": "y"}},  # no type
        {"name": "x", "input_schema": {}},  # Anthropic without a description
        {"name": "bad name", "description": "y"},
        {"name": "x", "description": "y", "color": "red"},  # no such card field
        ["get_weather"],
    ):
        assert not bulk_item.is_valid(not_a_tool), not_a_tool
    titles = {
        client.get("/openapi.json").json()["components"]["schemas"][ref.split("/")[-1]]["title"]
        for ref in (o["$ref"] for o in bulk_item.schema["anyOf"])
    }
    assert titles == {
        "ToolCard",
        "OpenAI tool (Chat Completions)",
        "OpenAI tool (Responses)",
        "Anthropic tool",
        "MCP tool",
    }


def test_a_tool_that_is_not_an_object_is_refused_in_the_error_shape(client: TestClient) -> None:
    bulk = client.post("/v1/tools/bulk", json={"tools": [weather_card(), 5]}, headers=ADMIN)
    single = client.put("/v1/tools/get_weather", json=["get_weather"], headers=ADMIN)
    for answer, kind in ((bulk, "a number"), (single, "an array")):  # JSON's names
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["code"] == "invalid_input"
        assert f"a tool must be a JSON object, not {kind}" in answer.text
    assert client.get("/v1/tools", headers=AGENT).json()["total"] == 0


def test_a_query_namespace_fills_in_and_never_silently_loses_to_the_body(
    client: TestClient,
) -> None:
    put = client.put("/v1/tools/get_weather?namespace=alpha", json=weather_card(), headers=ADMIN)
    assert put.status_code == 201 and put.json()["namespace"] == "alpha"
    for method, path in (("PUT", "/v1/tools/get_weather"), ("POST", "/v1/tools")):
        body = weather_card(namespace="beta")
        answer = client.request(method, f"{path}?namespace=alpha", json=body, headers=ADMIN)
        assert answer.status_code == 422, answer.text  # it went to beta
        assert "names namespace 'beta' but the query names 'alpha'" in answer.text
        same = client.request(method, f"{path}?namespace=beta", json=body, headers=ADMIN)
        assert same.status_code in (200, 201, 409), same.text
    assert client.get("/v1/tools?namespace=beta", headers=AGENT).json()["total"] == 1


def test_put_takes_the_name_from_the_path_in_every_format(client: TestClient) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    bodies = {
        "native": {"description": "Native."},
        "openai": {
            "type": "function",
            "function": {"description": "OpenAI.", "parameters": schema},
        },
        "responses": {"type": "function", "description": "Responses.", "parameters": schema},
        "anthropic": {"description": "Anthropic.", "input_schema": schema},
        "mcp": {"description": "MCP.", "inputSchema": schema},
    }
    for fmt, body in bodies.items():
        answer = client.put(f"/v1/tools/t_{fmt}", json=body, headers=ADMIN)
        assert answer.status_code == 201, (fmt, answer.text)
        assert answer.json()["name"] == f"t_{fmt}"


def test_the_openapi_document_lists_every_status_put_answers(client: TestClient) -> None:
    """PUT answers 201 when the tool is new (schemathesis: an undocumented status code)."""
    put = client.get("/openapi.json").json()["paths"]["/v1/tools/{name}"]["put"]["responses"]
    assert {"200", "201", "422", "503"} <= set(put)
    created = client.put("/v1/tools/get_weather", json=weather_card(), headers=ADMIN)
    updated = client.put(
        "/v1/tools/get_weather", json=weather_card(description="New text."), headers=ADMIN
    )
    assert (created.status_code, updated.status_code) == (201, 200)
