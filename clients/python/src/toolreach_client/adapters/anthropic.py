"""Anthropic custom tool search: the model calls your search tool; answer with a
``tool_result`` of ``tool_reference`` blocks, which the API expands into the definitions
declared with ``defer_loading: true`` (``GET /v1/tools?format=anthropic&defer_loading=true``).

    search = tool_reference_result(client, tool_use)   # tool_use: the model's tool_use block
    messages.append({"role": "user", "content": [search.output]})

No ``anthropic`` import is needed here: the block may be the SDK's object or its dict.
"""

from __future__ import annotations

from typing import Any

from toolreach_client.aclient import AsyncToolReach
from toolreach_client.adapters import ToolSearch, field, search_query
from toolreach_client.client import ToolReach
from toolreach_client.step import AsyncStep, Step

SEARCH_TOOL_NAME = "search_tools"


def search_tool(
    name: str = SEARCH_TOOL_NAME,
    description: str = (
        "Find the tools for one step of the task. Describe the step in words; the tools "
        "found become available to call."
    ),
) -> dict[str, Any]:
    """The custom search tool to declare (not deferred), as a ``ToolParam``."""
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "the step, in words"}},
            "required": ["query"],
        },
    }


def _checked(tool_use: Any) -> tuple[str, str]:
    if field(tool_use, "type") != "tool_use":
        raise ValueError(f"not a tool_use block: {field(tool_use, 'type')!r}")
    return str(field(tool_use, "id")), search_query(field(tool_use, "input"))


def _result(tool_use_id: str, step: Step | AsyncStep) -> ToolSearch:
    content = step.tools or [{"type": "text", "text": "No tool fits this step."}]
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    return ToolSearch(block, step)


def tool_reference_result(
    client: ToolReach, tool_use: Any, *, k: int = 3, namespace: str | None = None, **route: Any
) -> ToolSearch:
    """Route the search's query; ``output`` is the ``tool_result`` block answering it."""
    tool_use_id, query = _checked(tool_use)
    step = client.route(query, k=k, namespace=namespace, format="anthropic_tool_reference", **route)
    return _result(tool_use_id, step)


async def atool_reference_result(
    client: AsyncToolReach,
    tool_use: Any,
    *,
    k: int = 3,
    namespace: str | None = None,
    **route: Any,
) -> ToolSearch:
    """As ``tool_reference_result``, with the async client."""
    tool_use_id, query = _checked(tool_use)
    step = await client.route(
        query, k=k, namespace=namespace, format="anthropic_tool_reference", **route
    )
    return _result(tool_use_id, step)
