"""POST /v1/validate: invented names, malformed arguments, and what to do instead."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.test_tools import weather_card
from tests.conftest import ADMIN, AGENT


@pytest.fixture
def registered(client: TestClient) -> TestClient:
    tools = [
        weather_card(),
        weather_card(name="get_weather_forecast"),
        weather_card(name="send_email"),
    ]
    assert client.post("/v1/tools/bulk", json={"tools": tools}, headers=ADMIN).status_code == 200
    return client


def validate(client: TestClient, **body: object) -> dict[str, object]:
    response = client.post("/v1/validate", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    result: dict[str, object] = response.json()
    return result


def test_good_call(registered: TestClient) -> None:
    result = validate(registered, name="get_weather", arguments={"city": "Paris", "unit": "c"})
    assert result == {"valid": True, "errors": [], "did_you_mean": []}


def test_invented_name_gets_closest_real_ones(registered: TestClient) -> None:
    result = validate(registered, name="getWeather", arguments={"city": "Paris"})
    assert result["valid"] is False
    assert result["did_you_mean"][0] == "get_weather"  # type: ignore[index]
    assert "get_weather" in result["errors"][0]["message"]  # type: ignore[index]


def test_misspelled_name(registered: TestClient) -> None:
    result = validate(registered, name="send_emial")
    assert result["did_you_mean"] == ["send_email"]


def test_unknown_name_with_nothing_close(registered: TestClient) -> None:
    result = validate(registered, name="launch_rocket")
    assert result["valid"] is False
    assert result["did_you_mean"] == []


def test_other_namespace_is_separate(registered: TestClient) -> None:
    unknown = registered.post(
        "/v1/validate", json={"name": "get_weather", "namespace": "defualt"}, headers=AGENT
    )
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == (
        "no tools in namespace 'defualt'; did you mean 'default'?"
    )
    details = unknown.json()["error"]["details"]
    assert details == {"namespace": "defualt", "did_you_mean": ["default"]}


def test_missing_required_and_bad_enum(registered: TestClient) -> None:
    result = validate(registered, name="get_weather", arguments={"unit": "kelvin"})
    errors = result["errors"]
    assert result["valid"] is False
    paths = {e["path"]: e for e in errors}  # type: ignore[union-attr]
    assert "" in paths and "'city' is a required property" in paths[""]["message"]
    assert "/unit" in paths
    assert "kelvin" in paths["/unit"]["message"]
    assert paths["/unit"]["suggestion"] and "c" in paths["/unit"]["suggestion"]


def test_wrong_type_has_exact_path(registered: TestClient) -> None:
    result = validate(registered, name="get_weather", arguments={"city": 42})
    [error] = result["errors"]  # type: ignore[misc]
    assert error["path"] == "/city"
    assert "is not of type 'string'" in error["message"]


def test_deleted_tool_is_unknown(registered: TestClient) -> None:
    registered.delete("/v1/tools/send_email", headers=ADMIN)
    assert validate(registered, name="send_email")["valid"] is False


TREE_TOOL = {
    "name": "plant_tree",
    "description": "Plants a tree of named nodes.",
    "parameters": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["name"],
    },
}


def test_a_recursive_schema_is_a_tool_calls_are_validated_against(client: TestClient) -> None:
    """A tree node whose children $ref the node was refused as a $ref cycle."""
    created = client.post("/v1/tools", json=TREE_TOOL, headers=ADMIN)
    assert created.status_code == 201, created.text
    good = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    body = {"name": "plant_tree", "arguments": good}
    assert client.post("/v1/validate", json=body, headers=AGENT).json()["valid"] is True
    bad = {"name": "a", "children": [{"name": "b", "children": [{"children": []}]}]}
    answer = client.post("/v1/validate", json={**body, "arguments": bad}, headers=AGENT).json()
    assert answer["valid"] is False
    assert [e["path"] for e in answer["errors"]] == ["/children/0/children/0"]
    for fmt in ("openai", "openai_responses", "anthropic", "mcp"):
        exported = client.get(f"/v1/tools/plant_tree?format={fmt}", headers=AGENT)
        assert exported.status_code == 200, exported.text
        assert '"$ref":"#"' in exported.text.replace(" ", ""), fmt
