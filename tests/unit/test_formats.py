"""Formats agents already use: detection, import to a card, export, and round trips."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from registry.card import ToolCard
from registry.formats import (
    FORMATS,
    FormatError,
    could_be_exported,
    detect_format,
    exported_name,
    from_card,
    to_card_data,
)

PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
    },
    "required": ["city"],
}
RETURNS: dict[str, Any] = {"type": "object", "properties": {"temp_c": {"type": "number"}}}
DESCRIPTION = "Current weather for a city. Use it for today, not for forecasts."

OPENAI = {
    "type": "function",
    "function": {"name": "get_weather", "description": DESCRIPTION, "parameters": PARAMS},
}
OPENAI_FLAT = {
    "type": "function",
    "name": "get_weather",
    "description": DESCRIPTION,
    "parameters": PARAMS,
    "strict": False,
}
ANTHROPIC = {"name": "get_weather", "description": DESCRIPTION, "input_schema": PARAMS}
MCP = {
    "name": "get_weather",
    "title": "Weather now",
    "description": DESCRIPTION,
    "inputSchema": PARAMS,
    "outputSchema": RETURNS,
    "annotations": {"readOnlyHint": True},
}
NATIVE = {"name": "get_weather", "description": DESCRIPTION, "parameters": PARAMS, "tags": ["w"]}


def to_card(item: dict[str, Any], namespace: str | None = None) -> ToolCard:
    return ToolCard.model_validate(to_card_data(item, namespace=namespace))


@pytest.mark.parametrize(
    ("item", "fmt"),
    [
        (OPENAI, "openai"),
        (OPENAI_FLAT, "openai"),
        (ANTHROPIC, "anthropic"),
        ({**ANTHROPIC, "type": "custom"}, "anthropic"),
        (MCP, "mcp"),
        ({"name": "x", "inputSchema": PARAMS}, "mcp"),
        (NATIVE, "native"),
        ({"name": "ping", "description": "Is it up?"}, "native"),
        ({"name": "ping", "description": "Is it up?", "pinned": True}, "native"),
    ],
)
def test_detect_format(item: dict[str, Any], fmt: str) -> None:
    assert detect_format(item) == fmt


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ({**ANTHROPIC, "inputSchema": PARAMS}, "ambiguous tool: it has 'input_schema' (Anthropic)"),
        ({**NATIVE, "input_schema": PARAMS}, "'parameters' (native)"),
        ({"description": "no name"}, "unrecognised tool with keys ['description']"),
        ({"type": "web_search_20250305", "name": "web_search"}, "unrecognised tool"),
        ({"name": "x", "args": {}}, "unrecognised tool with keys ['args', 'name']"),
    ],
)
def test_unknown_or_ambiguous_shape_says_what_was_expected(item: dict[str, Any], says: str) -> None:
    with pytest.raises(FormatError) as caught:
        detect_format(item)
    assert says in str(caught.value)
    assert "expected a native card" in str(caught.value)
    assert "an MCP tool {name, description?, inputSchema, outputSchema?}" in str(caught.value)


def test_not_a_mapping_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="must be a JSON object, not an array"):
        detect_format([1])  # type: ignore[arg-type]


def test_openai_function_must_be_an_object() -> None:
    with pytest.raises(FormatError, match="'function' must be an object"):
        to_card_data({"type": "function", "function": "get_weather"}, namespace=None)


def test_imports_carry_name_description_and_schemas() -> None:
    for item in (OPENAI, OPENAI_FLAT, ANTHROPIC, MCP, NATIVE):
        tool = to_card(item)
        assert (tool.name, tool.description, tool.parameters) == (
            "get_weather",
            DESCRIPTION,
            PARAMS,
        )
    mcp = to_card(MCP)
    assert (mcp.summary, mcp.title, mcp.returns) == ("Weather now", "Weather now", RETURNS)
    assert mcp.annotations is not None and mcp.annotations.readOnlyHint is True
    assert to_card(ANTHROPIC).summary == "Current weather for a city."


def test_mcp_title_from_annotations_and_description_fallback() -> None:
    item = {"name": "ping", "inputSchema": {"type": "object"}, "annotations": {"title": "Ping it"}}
    tool = to_card(item)
    assert (tool.summary, tool.description) == ("Ping it", "Ping it")


def test_namespace_argument_applies_only_when_the_item_has_none() -> None:
    assert to_card(ANTHROPIC, namespace="team-a").namespace == "team-a"
    assert to_card({**NATIVE, "namespace": "own"}, namespace="team-a").namespace == "own"
    assert to_card(NATIVE).namespace == "default"


def test_import_does_not_share_or_change_the_input() -> None:
    item = copy.deepcopy(OPENAI)
    data = to_card_data(item, namespace="n")
    data["parameters"]["properties"].clear()
    assert item == OPENAI


def test_missing_description_is_left_for_the_card_to_refuse() -> None:
    data = to_card_data({"type": "function", "function": {"name": "x"}}, namespace=None)
    assert data == {"name": "x"}


@pytest.mark.parametrize(
    ("item", "fmt", "carried"),
    [
        (OPENAI, "openai", None),
        (ANTHROPIC, "anthropic", None),
        (MCP, "mcp", None),
        ({"name": "x", "description": "X.", "inputSchema": PARAMS}, "mcp", None),
        (OPENAI_FLAT, "openai_responses", None),
        (OPENAI_FLAT, "openai", ("name", "description", "parameters")),
    ],
)
def test_round_trip(item: dict[str, Any], fmt: str, carried: tuple[str, ...] | None) -> None:
    out = from_card(to_card(item), fmt)
    if carried is None:
        assert out == item
    else:
        assert {k: out["function"][k] for k in carried} == {k: item[k] for k in carried}


def test_export_to_each_format() -> None:
    tool = to_card(NATIVE)
    assert from_card(tool, "openai") == {
        "type": "function",
        "function": {"name": "get_weather", "description": DESCRIPTION, "parameters": PARAMS},
    }
    assert from_card(tool, "anthropic") == ANTHROPIC
    assert from_card(tool, "openai_responses") == OPENAI_FLAT
    assert from_card(tool, "mcp") == {  # no title: the card has none
        "name": "get_weather",
        "description": DESCRIPTION,
        "inputSchema": PARAMS,
    }


def test_mcp_annotations_and_title_survive_import_and_export() -> None:
    hints = {"title": "Weather", "readOnlyHint": True, "openWorldHint": False}
    item = {**MCP, "title": "Weather now", "annotations": hints}
    tool = to_card(item)
    assert from_card(tool, "mcp") == item
    again = ToolCard.model_validate(tool.model_dump(mode="json"))  # as stored and read back
    assert from_card(again, "mcp") == item
    assert tool.model_dump(mode="json")["annotations"] == hints  # unset hints are absent


@pytest.mark.parametrize(
    ("annotations", "says"),
    [
        ({"readOnly": True}, "Extra inputs are not permitted"),
        ({"readOnlyHint": "yes"}, "Input should be a valid boolean"),
        ({"destructiveHint": 1}, "Input should be a valid boolean"),
    ],
)
def test_unknown_or_mistyped_annotations_are_refused(
    annotations: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        to_card({**MCP, "annotations": annotations})


def test_mcp_output_schema_only_for_object_returns() -> None:
    assert "outputSchema" not in from_card(to_card({**NATIVE, "returns": {"type": "array"}}), "mcp")
    assert from_card(to_card({**NATIVE, "returns": RETURNS}), "mcp")["outputSchema"] == RETURNS


def test_export_does_not_share_the_cards_schemas() -> None:
    tool = to_card(NATIVE)
    from_card(tool, "anthropic")["input_schema"]["properties"].clear()
    assert tool.parameters == PARAMS


def test_unknown_export_format() -> None:
    assert FORMATS == ("openai", "openai_responses", "anthropic", "mcp")
    with pytest.raises(ValueError, match="unknown tool format 'gemini'; expected one of openai"):
        from_card(to_card(NATIVE), "gemini")


OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MCP_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")


def test_a_name_every_format_accepts_is_exported_as_it_is() -> None:
    for fmt in FORMATS:
        assert exported_name("get_weather-v2", fmt) == "get_weather-v2"
    assert exported_name("github.create_issue", "mcp") == "github.create_issue"


def test_a_name_a_format_refuses_is_made_to_fit_and_kept_apart() -> None:
    dotted = exported_name("billing:refund.v2", "openai")
    assert OPENAI_NAME.match(dotted) and dotted.startswith("billing_refund_v2_")
    assert dotted != exported_name("billing_refund.v2", "openai")  # same once replaced
    assert exported_name("billing:refund.v2", "anthropic") == dotted
    assert exported_name("billing:refund.v2", "mcp").startswith("billing_refund.v2_")
    long = "a" * 100
    assert OPENAI_NAME.match(exported_name(long, "openai"))
    assert exported_name(long, "mcp") == long
    assert MCP_NAME.match(exported_name("x:" * 64, "mcp"))
    for fmt in FORMATS:
        assert could_be_exported(exported_name("billing:refund.v2", fmt))
    assert not could_be_exported("billing_refund_v2") and not could_be_exported("x_1234567")
    card = ToolCard(name="billing:refund.v2", description="Refund an invoice.")
    assert from_card(card, "openai")["function"]["name"] == dotted
    assert from_card(card, "anthropic")["name"] == dotted
