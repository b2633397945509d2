"""The platforms' own tool search: a route's tools as the result their search tool returns.

- OpenAI Responses, ``tool_search`` run by the client: the agent answers the model's
  ``tool_search_call`` with one ``tool_search_output`` input item carrying the found function
  tools (``{"type": "tool_search_output", "call_id", "execution": "client", "tools"}``).
- Anthropic, a custom (client-side) tool search: the agent's ``tool_result`` holds one
  ``tool_reference`` block per found tool (``{"type": "tool_reference", "tool_name"}``); the API
  expands each into the definition the request declared with ``defer_loading: true``.

Both need every definition up front on the platform's side (OpenAI may, Anthropic must):
``deferred`` marks an exported definition so, and ``GET /v1/tools?defer_loading=true`` pages a
whole namespace that way. For OpenAI the deferred functions go inside ``namespace`` tools
(``openai_namespaces``): its tool search keeps a deferred function's schema out of the
request only there (its guide: "use namespaces where possible"; langchain PR #38573 measured
flat deferral making requests larger), and it advises fewer than 10 functions in each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from registry.card import ToolCard
from registry.formats import from_card

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


FUNCTIONS = "openai_responses"
GROUP_MAX = 9  # functions in one OpenAI namespace tool: "fewer than 10", its guide says
_GROUP_NAME = re.compile(r"[^A-Za-z0-9_-]+")  # what a function name may hold, for the group's


def openai_namespaces(cards: Sequence[ToolCard]) -> list[dict[str, Any]]:
    """``cards`` as OpenAI Responses ``namespace`` tools of deferred function tools: grouped
    by their first tag (no tag: their ToolReach namespace), in name order, at most
    ``GROUP_MAX`` a group (``weather``, ``weather_2``, ...). The model sees each group's name
    and description until its tool search loads the functions, so the description names
    them. A call from one carries the group as its ``namespace`` and the function's name."""
    groups: dict[str, list[ToolCard]] = {}
    for card in sorted(cards, key=lambda c: c.name):
        groups.setdefault(_group_of(card), []).append(card)
    tools = []
    for group, members in groups.items():
        for start in range(0, len(members), GROUP_MAX):
            chunk = members[start : start + GROUP_MAX]
            name = group if start == 0 else f"{group}_{start // GROUP_MAX + 1}"[-64:]
            functions = [
                deferred(from_card(c, "openai_responses"), "openai_responses") for c in chunk
            ]
            listed = ", ".join(f["name"] for f in functions)
            tools.append(
                {
                    "type": "namespace",
                    "name": name,
                    "description": f"Tools for {group.replace('_', ' ')}: {listed}.",
                    "tools": functions,
                }
            )
    return tools


def _group_of(card: ToolCard) -> str:
    label = card.tags[0] if card.tags else card.namespace
    return _GROUP_NAME.sub("_", label).strip("_")[:56] or "tools"
