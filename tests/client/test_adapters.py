"""The adapters, each with its framework's own types, against the real service; and the
client itself imports no framework."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import httpx
from anthropic.types import ToolParam, ToolReferenceBlockParam, ToolResultBlockParam, ToolUseBlock
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph_bigtool import create_agent
from openai.types.responses import (
    FunctionToolParam,
    ResponseToolSearchCall,
    ResponseToolSearchOutputItemParamParam,
    ToolSearchToolParam,
)
from pydantic import ConfigDict, TypeAdapter
from toolreach_client import AsyncStep, AsyncToolReach, ToolReach
from toolreach_client.adapters import anthropic as anthropic_adapter
from toolreach_client.adapters import openai as openai_adapter
from toolreach_client.adapters.langgraph import (
    RoutedState,
    ToolRetriever,
    gateway_tools,
    tool_selection_node,
)

from tests.client.conftest import AGENT_KEY, REPO, Service

FORBID = ConfigDict(extra="forbid")


def valid(item_type: Any, items: list[Any]) -> None:
    """Each item is the SDK's type exactly: no key it lacks, none dropped."""
    assert TypeAdapter(list[item_type], config=FORBID).validate_python(items) == items


FRAMEWORKS = ("langchain", "langgraph", "openai", "anthropic", "agents")
SERVER = ("app", "registry", "fastapi", "sqlalchemy", "torch", "numpy")


def test_importing_the_client_imports_no_framework_and_nothing_of_the_server() -> None:
    code = (
        "import sys, toolreach_client, toolreach_client.adapters;"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({FRAMEWORKS + SERVER!r})))"
    )
    # From the repository's root, where the server's packages could be imported.
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


class ToolCallingFake(GenericFakeChatModel):
    """langchain-core's fake chat model, able to have tools bound (it records them)."""

    bound: list[list[str]]

    def bind_tools(self, tools: Sequence[Any], **_kwargs: Any) -> Any:
        self.bound.append([t.name if isinstance(t, BaseTool) else t.__name__ for t in tools])
        return self


def weather_tools() -> dict[str, BaseTool]:
    def get_current_weather(location: str, units: str = "metric") -> str:
        """Get the weather right now at a place."""
        return f"18 °C and sunny in {location}"

    def get_weather_forecast(location: str, days: int = 3) -> str:
        """Get the forecast for a place."""
        return f"rain in {location} for {days} days"

    return {
        f.__name__: StructuredTool.from_function(f)
        for f in (get_current_weather, get_weather_forecast)
    }


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def test_bigtool_retrieves_through_toolreach(service: Service, namespace: str) -> None:
    registry = weather_tools()
    llm = ToolCallingFake(
        messages=iter(
            [
                call("retrieve_tools", {"query": "current weather in a city"}, "c1"),
                # langgraph-bigtool 0.0.3 runs a chosen tool with ToolNode.inject_tool_args,
                # which langgraph-prebuilt 1.x no longer has: the model answers from here.
                AIMessage("I can use get_current_weather."),
            ]
        ),
        bound=[],
    )
    with ToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as client:

        async def run() -> dict[str, Any]:
            async with AsyncToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as ac:
                retriever = ToolRetriever(client, ac, k=3, tool_ids=registry)
                agent = create_agent(
                    llm,
                    registry,
                    retrieve_tools_function=retriever.function,
                    retrieve_tools_coroutine=retriever.coroutine,
                ).compile()
                state = await agent.ainvoke({"messages": [HumanMessage("Weather in Paris?")]})
                assert len(retriever.steps) == 1
                step = retriever.steps[0]
                assert isinstance(step, AsyncStep)
                await step.report("get_current_weather", "success")
                return state

        state = asyncio.run(run())
    assert state["selected_tool_ids"] == ["get_current_weather", "get_weather_forecast"]
    assert llm.bound[1] == ["retrieve_tools", "get_current_weather", "get_weather_forecast"]
    observed = [m.content for m in state["messages"] if isinstance(m, ToolMessage)]
    assert observed == ["Available tools: ['get_current_weather', 'get_weather_forecast']"]


def test_the_retriever_keeps_the_signature_bigtool_expects(
    service: Service, namespace: str
) -> None:
    with ToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as client:
        retriever = ToolRetriever(client, k=2)
        tool = StructuredTool.from_function(func=retriever.function)
        assert tool.name == "retrieve_tools" and set(tool.args) == {"query"}
        assert tool.invoke({"query": "translate this text into French"})[0] == "translate_text"


def test_the_selection_node_binds_only_the_routed_tools(service: Service, namespace: str) -> None:
    registry = weather_tools()
    llm = ToolCallingFake(
        messages=iter([call("get_current_weather", {"location": "Paris, FR"}, "c1")]), bound=[]
    )

    with ToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as client:
        graph = StateGraph(RoutedState)
        graph.add_node("select", tool_selection_node(client, llm, registry, k=3))
        graph.add_edge(START, "select")
        graph.add_edge("select", END)
        state = graph.compile().invoke(
            {"messages": [HumanMessage("what's the weather in Paris now")]}
        )
        assert state["routed_tools"][0] == "get_current_weather"
        assert state["routed_parts"] == [] and state["routed_part_of"] == {}
        assert llm.bound == [[n for n in state["routed_tools"] if n in registry]]
        assert state["messages"][-1].tool_calls[0]["name"] == "get_current_weather"
        assert client.feedback(state["route_id"], "get_current_weather").verdict == "hit_at_1"


def test_openai_tool_search_call_is_answered(service: Service, namespace: str) -> None:
    call = ResponseToolSearchCall(
        id="ts_1",
        call_id="call_7",
        arguments={"query": "convert 250 US dollars to euros"},
        execution="client",
        status="completed",
        type="tool_search_call",
    )
    valid(ToolSearchToolParam, [openai_adapter.tool_search_tool()])
    with ToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as client:
        search = openai_adapter.tool_search_output(client, call, k=2)
        item = search.output
        TypeAdapter(list[ResponseToolSearchOutputItemParamParam]).validate_python([item])
        valid(FunctionToolParam, item["tools"])
        assert (item["type"], item["call_id"], item["execution"]) == (
            "tool_search_output",
            "call_7",
            "client",
        )
        assert item["tools"][0]["name"] == "convert_currency"
        assert search.step.validate("convert_currency", {"amount": 250}).valid is False
        as_dict = call.model_dump() | {"arguments": '{"query": "convert dollars to euros"}'}
        assert openai_adapter.tool_search_output(client, as_dict).output["call_id"] == "call_7"
        # Several queries: each a part of the step, each covered, the item still the SDK's.
        queries = ["convert 250 US dollars to euros", "translate text to German"]
        many = call.model_dump() | {"arguments": {"queries": queries}}
        search = openai_adapter.tool_search_output(client, many, k=2)
        TypeAdapter(list[ResponseToolSearchOutputItemParamParam]).validate_python([search.output])
        assert search.step.parts == ["convert 250 US dollars to euros;", "translate text to German"]
        assert {t["name"] for t in search.output["tools"]} == {"convert_currency", "translate_text"}
        assert search.step.for_part(1) == ["translate_text"]


def test_anthropic_custom_tool_search_answers_tool_references(
    service: Service, namespace: str
) -> None:
    valid(ToolParam, [anthropic_adapter.search_tool()])
    tool_use = ToolUseBlock(
        id="toolu_1",
        type="tool_use",
        name="search_tools",
        input={"query": "translate text to German"},
    )

    async def run() -> dict[str, Any]:
        async with AsyncToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as client:
            search = await anthropic_adapter.atool_reference_result(client, tool_use, k=2)
            assert isinstance(search.step, AsyncStep)
            await search.step.report(search.output["content"][0]["tool_name"], "success")
            return search.output

    block = asyncio.run(run())
    # The block's content is a lazy Iterable (it would pass anything): checked on its own.
    valid(ToolResultBlockParam, [{**block, "content": "checked below"}])
    valid(ToolReferenceBlockParam, block["content"])
    assert block["tool_use_id"] == "toolu_1"
    assert block["content"][0] == {"type": "tool_reference", "tool_name": "translate_text"}


def test_gateway_tools_call_through_the_step() -> None:
    """Without implementations of its own, the agent runs the routed tools by the gateway
    (replayed here: the gateway's contract, app/gateway/schemas.py)."""
    definition = {
        "type": "function",
        "function": {
            "name": "track_shipment",
            "description": "Track a parcel.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
    route = {"route_id": "r9", "namespace": "shop", "model": "m", "candidates": []}
    failed = {
        "ok": False,
        "name": "track_shipment",
        "namespace": "shop",
        "error": {"code": "NOT_YET_SHIPPED", "message": "no", "retryable": False},
    }
    answers = [route | {"tools": [definition]}, failed]
    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=answers.pop(0))

    with ToolReach("http://t.test", transport=httpx.MockTransport(answer)) as client:
        step = client.route("where is my parcel", format="openai")
        [tool] = gateway_tools(step)
        assert tool.name == "track_shipment" and set(tool.args) == {"order_id"}
        observed = tool.invoke({"order_id": "o100234"})
    assert observed == {"error": failed["error"]}
    assert sent[1] == {
        "name": "track_shipment",
        "arguments": {"order_id": "o100234"},
        "namespace": "shop",
        "route_id": "r9",
    }
