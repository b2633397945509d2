"""OpenAI Responses API, ``tool_search`` run by the client: route the model's
``tool_search_call`` and answer it with a ``tool_search_output`` item (docs/MCP.md).

    search = tool_search_output(client, call)      # call: the output item of type tool_search_call
    next_input = [*previous_input, call, search.output]

Declare the search with ``tool_search_tool()``. The functions the model then calls carry
exported names; ``search.step.validate(name, ...)`` and ``report`` map them back.
No ``openai`` import is needed here: the call may be the SDK's object or its dict.
"""

from __future__ import annotations

from typing import Any

from toolreach_client.aclient import AsyncToolReach
from toolreach_client.adapters import ToolSearch, field, search_query
from toolreach_client.client import ToolReach

PARAMETERS = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "the step to find tools for"}},
    "required": ["query"],
    "additionalProperties": False,
}


def tool_search_tool(
    description: str = "Find the tools for one step of the task: describe the step in words.",
) -> dict[str, Any]:
    """The ``tool_search`` tool, run by the client (a ``ToolSearchToolParam``)."""
    return {
        "type": "tool_search",
        "execution": "client",
        "description": description,
        "parameters": PARAMETERS,
    }


def _checked(call: Any) -> tuple[str, str]:
    if field(call, "type") != "tool_search_call":
        raise ValueError(f"not a tool_search_call: {field(call, 'type')!r}")
    call_id = field(call, "call_id")
    if not call_id:
        raise ValueError("the tool_search_call has no call_id")
    return str(call_id), search_query(field(call, "arguments"))


def tool_search_output(
    client: ToolReach, call: Any, *, k: int = 3, namespace: str | None = None, **route: Any
) -> ToolSearch:
    """Route the call's query; ``output`` is the ``tool_search_output`` item answering it."""
    call_id, query = _checked(call)
    step = client.route(
        query, k=k, namespace=namespace, format="openai_tool_search", call_id=call_id, **route
    )
    return ToolSearch(step.tools[0], step)


async def atool_search_output(
    client: AsyncToolReach, call: Any, *, k: int = 3, namespace: str | None = None, **route: Any
) -> ToolSearch:
    """As ``tool_search_output``, with the async client."""
    call_id, query = _checked(call)
    step = await client.route(
        query, k=k, namespace=namespace, format="openai_tool_search", call_id=call_id, **route
    )
    return ToolSearch(step.tools[0], step)
