"""LangGraph and LangChain: ToolReach as langgraph-bigtool's tool retrieval, and a node that
binds only the routed tools to a chat model.

    retriever = ToolRetriever(client, tool_ids=tool_registry)
    agent = create_agent(llm, tool_registry, retrieve_tools_function=retriever.function,
                         retrieve_tools_coroutine=retriever.coroutine)

    graph.add_node("agent", tool_selection_node(client, llm, tools))   # tools: name -> BaseTool
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import MessagesState

from toolreach_client.aclient import AsyncToolReach
from toolreach_client.client import ToolReach
from toolreach_client.step import AsyncStep, Step

RETRIEVE_DOC = "Retrieve the tools to use for one step, given a search query describing it."


class ToolRetriever:
    """``function`` and ``coroutine`` have the signature langgraph-bigtool expects,
    ``retrieve_tools(query: str) -> list[str]`` (tool ids: the tools' own names). Only ids
    in ``tool_ids`` (the agent's registry) are returned; ``steps`` keeps each route, to
    report what was used."""

    def __init__(
        self,
        client: ToolReach | None = None,
        async_client: AsyncToolReach | None = None,
        *,
        k: int = 3,
        namespace: str | None = None,
        tool_ids: Collection[str] | None = None,
    ) -> None:
        self.steps: list[Step | AsyncStep] = []
        self.function = self._function(client, k, namespace) if client else None
        self.coroutine = self._coroutine(async_client, k, namespace) if async_client else None
        self._ids = tool_ids

    def _known(self, step: Step | AsyncStep) -> list[str]:
        self.steps.append(step)
        return [n for n in step.names if self._ids is None or n in self._ids]

    def _function(
        self, client: ToolReach, k: int, namespace: str | None
    ) -> Callable[[str], list[str]]:
        def retrieve_tools(query: str) -> list[str]:
            return self._known(client.route(query, k=k, namespace=namespace))

        retrieve_tools.__doc__ = RETRIEVE_DOC
        return retrieve_tools

    def _coroutine(
        self, client: AsyncToolReach, k: int, namespace: str | None
    ) -> Callable[[str], Awaitable[list[str]]]:
        async def retrieve_tools(query: str) -> list[str]:
            return self._known(await client.route(query, k=k, namespace=namespace))

        retrieve_tools.__doc__ = RETRIEVE_DOC
        return retrieve_tools


def gateway_tools(step: Step) -> list[BaseTool]:
    """The step's tools as LangChain tools that run through ToolReach's gateway (the step
    must have been routed with ``format="openai"``); a failed call's error, with the
    card's suggestion, is the tool's answer, so the model can act on it."""

    def tool(definition: dict[str, Any]) -> BaseTool:
        function = definition["function"]

        def run(**arguments: Any) -> Any:
            result = step.call(function["name"], arguments)
            if result.ok:
                return result.result
            error = result.error
            return {"error": error.model_dump(exclude_none=True) if error else "failed"}

        return StructuredTool.from_function(
            func=run,
            name=function["name"],
            description=function.get("description", ""),
            args_schema=function.get("parameters") or {"type": "object", "properties": {}},
        )

    return [tool(definition) for definition in step.tools]


class RoutedState(MessagesState, total=False):
    """The messages, and what the selection node adds: its route, the routed names and,
    for a step that asked for several things, its parts and the part each name serves."""

    route_id: str
    routed_tools: list[str]
    routed_parts: list[str]
    routed_part_of: dict[str, int]


def last_human_text(messages: list[AnyMessage]) -> str:
    """The step to route: the text of the latest human message."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return str(message.text)
    raise ValueError("no human message to route")


def tool_selection_node(
    client: ToolReach,
    model: BaseChatModel,
    tools: Mapping[str, BaseTool] | None = None,
    *,
    k: int = 3,
    namespace: str | None = None,
    query: Callable[[list[AnyMessage]], str] = last_human_text,
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A graph node: route the step (``query`` of the messages), bind only the routed tools
    to ``model`` and call it. ``tools`` maps tool names to your implementations; without
    it, the routed definitions are called through the gateway (``gateway_tools``)."""

    def select_tools(state: Mapping[str, Any]) -> dict[str, Any]:
        messages = list(state["messages"])
        if tools is None:
            step = client.route(query(messages), k=k, namespace=namespace, format="openai")
            bound = gateway_tools(step)
        else:
            step = client.route(query(messages), k=k, namespace=namespace)
            bound = [tools[name] for name in step.names if name in tools]
        response = model.bind_tools(bound).invoke(messages)
        return {
            "messages": [response],
            "route_id": step.route_id,
            "routed_tools": step.names,
            "routed_parts": step.parts,
            "routed_part_of": {c.name: c.part for c in step.candidates if c.part is not None},
        }

    return select_tools
