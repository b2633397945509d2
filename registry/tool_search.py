"""The platforms' own tool search: a route's tools as the result their search tool returns.

- OpenAI Responses, ``tool_search`` run by the client: the agent answers the model's
  ``tool_search_call`` with one ``tool_search_output`` input item carrying the found function
  tools (``{"type": "tool_search_output", "call_id", "execution": "client", "tools"}``).
- Anthropic, a custom (client-side) tool search: the agent's ``tool_result`` holds one
  ``tool_reference`` block per found tool (``{"type": "tool_reference", "tool_name"}``); the API
  expands each into the definition the request declared with ``defer_loading: true``.

Both need every definition up front on the platform's side (OpenAI may, Anthropic must):
``deferred`` marks an exported definition so, and ``GET /v1/tools?defer_loading=true`` pages a
whole namespace that way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

SearchFormat = Literal["openai_tool_search", "anthropic_tool_reference"]
SEARCH_FORMATS: tuple[SearchFormat, ...] = ("openai_tool_search", "anthropic_tool_reference")

# The tool-definition format each search result refers to: the names must be the same.
DEFINITIONS: dict[str, str] = {
    "openai_tool_search": "openai_responses",
    "anthropic_tool_reference": "anthropic",
}
# The formats whose tool definitions take ``defer_loading``.
DEFERRABLE = ("openai_responses", "anthropic")


def definition_format(fmt: str) -> str:
    """The tool-definition format behind an answer format (itself for a plain one)."""
    return DEFINITIONS.get(fmt, fmt)


def search_result(
    fmt: str, tools: Sequence[dict[str, Any]], *, call_id: str | None = None
) -> list[dict[str, Any]]:
    """``tools`` (definitions in ``definition_format(fmt)``) as ``fmt``'s search result:
    the list the agent pastes (for a plain format, the tools themselves)."""
    if fmt == "openai_tool_search":
        item = {
            "type": "tool_search_output",
            "call_id": call_id,
            "execution": "client",
            "tools": list(tools),
        }
        return [item]
    if fmt == "anthropic_tool_reference":
        return [{"type": "tool_reference", "tool_name": tool["name"]} for tool in tools]
    return list(tools)


def deferred(tool: dict[str, Any], fmt: str) -> dict[str, Any]:
    """An exported definition marked to stay out of the model's context until a search finds
    it; ValueError for a format whose platform has no such mark."""
    if fmt not in DEFERRABLE:
        raise ValueError(
            f"defer_loading applies to the formats {', '.join(DEFERRABLE)}, not {fmt!r}"
        )
    return {**tool, "defer_loading": True}
