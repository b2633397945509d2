"""Every exported shape checked against the platforms' own SDK types (test dependencies only).

Lists are checked as lists (``TypeAdapter(list[T])``), with unknown keys forbidden where the
type allows it and the validated value compared with the input, so a key the type does not
know cannot slip through. A field typed as a lazy ``Iterable`` (``tools`` of a
``tool_search_output``) passes anything, so its items are checked on their own.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ToolParam, ToolReferenceBlockParam
from mcp.types import Tool as MCPTool
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam, ResponseToolSearchOutputItemParamParam
from pydantic import ConfigDict, TypeAdapter, ValidationError

from registry.card import ToolCard
from registry.formats import from_card
from registry.tool_search import deferred, definition_format, search_result

PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "units": {"enum": ["metric", "imperial"]}},
    "required": ["city"],
}
CARDS = [
    ToolCard(
        name="get_weather",
        title="Weather now",
        description="Current weather for a city.",
        parameters=PARAMS,
        returns={"type": "object", "properties": {"temp_c": {"type": "number"}}},
        annotations={"readOnlyHint": True, "openWorldHint": True},  # type: ignore[arg-type]
    ),
    ToolCard(name="billing:refund.v2", description="Refund an invoice."),
    ToolCard(name="ping", description="Is it up?", parameters={"type": "object"}),
]
FORBID = ConfigDict(extra="forbid")


def checked(item_type: Any, items: list[dict[str, Any]], *, forbid: bool = True) -> None:
    """``items`` is a valid ``list[item_type]``, and validating it drops no key (unknown
    keys refused, or with ``forbid=False`` ignored and caught by the comparison)."""
    adapter = TypeAdapter(list[item_type], config=FORBID if forbid else None)
    assert adapter.validate_python(items) == items


def export(fmt: str) -> list[dict[str, Any]]:
    return [from_card(card, fmt) for card in CARDS]


def test_openai_chat_tools() -> None:
    checked(ChatCompletionFunctionToolParam, export("openai"))


def test_openai_responses_function_tools_are_flat() -> None:
    tools = export("openai_responses")
    checked(FunctionToolParam, tools)
    checked(FunctionToolParam, [deferred(tool, "openai_responses") for tool in tools])
    assert all("function" not in tool and tool["strict"] is False for tool in tools)


def test_anthropic_tools_and_deferred_tools() -> None:
    tools = export("anthropic")
    checked(ToolParam, tools)
    checked(ToolParam, [deferred(tool, "anthropic") for tool in tools])


def test_mcp_tools_with_title_annotations_and_output_schema() -> None:
    tools = export("mcp")
    parsed = TypeAdapter(list[MCPTool]).validate_python(tools)
    assert [t.model_dump(by_alias=True, exclude_none=True) for t in parsed] == tools
    first = parsed[0]
    assert first.title == "Weather now" and first.output_schema is not None
    assert first.annotations is not None and first.annotations.read_only_hint is True


def test_openai_tool_search_output_item() -> None:
    tools = export(definition_format("openai_tool_search"))
    items = search_result("openai_tool_search", tools, call_id="call_123")
    checked(FunctionToolParam, items[0]["tools"])  # the lazy Iterable field, item by item
    parsed = TypeAdapter(list[ResponseToolSearchOutputItemParamParam]).validate_python(items)
    assert {k: v for k, v in parsed[0].items() if k != "tools"} == {
        "type": "tool_search_output",
        "call_id": "call_123",
        "execution": "client",
    }


def test_anthropic_tool_reference_blocks_name_the_exported_tools() -> None:
    tools = export(definition_format("anthropic_tool_reference"))
    blocks = search_result("anthropic_tool_reference", tools)
    checked(ToolReferenceBlockParam, blocks)
    assert [b["tool_name"] for b in blocks] == [t["name"] for t in tools]
    assert blocks[1]["tool_name"].startswith("billing_refund_v2_")  # as the definition names it


def test_the_checks_would_catch_a_wrong_shape() -> None:
    nested = [{"type": "function", "function": export("openai_responses")[0]}]
    with pytest.raises(ValidationError):
        checked(FunctionToolParam, nested)
    wrong_key = [{**export("anthropic")[0], "inputSchema": PARAMS}]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        checked(ToolParam, wrong_key)
    with pytest.raises(AssertionError):  # ignored by the type, but not silently kept
        checked(ToolParam, wrong_key, forbid=False)
    with pytest.raises(ValidationError):
        checked(ToolReferenceBlockParam, [{"type": "tool_reference", "name": "x"}])


def test_defer_loading_only_where_the_platform_has_it() -> None:
    with pytest.raises(ValueError, match="defer_loading applies to the formats"):
        deferred(export("mcp")[0], "mcp")
