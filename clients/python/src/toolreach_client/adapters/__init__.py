"""Thin adapters for agent frameworks. Each module imports its framework only when it is
itself imported, and each framework is an optional extra:

- ``toolreach_client.adapters.langgraph`` (``toolreach-client[langgraph]``): langgraph-bigtool's
  ``retrieve_tools`` and a tool-selection node binding the routed tools to a chat model;
- ``toolreach_client.adapters.openai`` (``[openai]``): the answer to a client-executed
  Responses ``tool_search_call`` (a ``tool_search_output`` item);
- ``toolreach_client.adapters.anthropic`` (``[anthropic]``): the ``tool_result`` of a custom
  tool-search tool, made of ``tool_reference`` blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolreach_client.step import AsyncStep, Step


@dataclass(frozen=True)
class ToolSearch:
    """A platform tool search answered: ``output`` goes back to the model; ``step`` holds
    the route, to validate and report the tool the model then calls."""

    output: dict[str, Any]
    step: Step | AsyncStep


def search_query(arguments: Any) -> str:
    """The query of a search tool's arguments: ``{"query": ...}`` (or ``queries``, a list,
    joined by "; ": the service reads each as a part of the step and covers them all),
    also as a JSON string. ``ToolSearch.step.parts`` holds the parts as read."""
    import json

    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return str(arguments)
    if isinstance(arguments, dict):
        query = arguments.get("query")
        if isinstance(query, str) and query.strip():
            return query
        queries = arguments.get("queries")
        if isinstance(queries, list) and all(isinstance(q, str) for q in queries) and queries:
            return "; ".join(queries)
    raise ValueError(f"a tool search needs a 'query' string; got {arguments!r}")


def field(item: Any, name: str) -> Any:
    """A field of an SDK object (pydantic) or of its dict form."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)
