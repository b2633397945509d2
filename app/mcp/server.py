"""The MCP server: ToolReach's meta-tools, each a thin call to the service /v1 uses.

- ``search_tools {query | queries, k?, context?, split?}``: the route of ``POST /v1/route``
  (batched, ranked and recorded by the same executor); answers with full MCP tool
  definitions, each with its ``score``, ``missing_required`` (and ``confidence`` when the
  route gives one, ``part`` for a step read as several parts, whose ``parts`` the answer
  lists), so one call is enough; the ``route_id`` lets ``validate_call`` record which tool
  was used. ``queries`` (up to 16 steps) is ``POST /v1/route/batch``: one result per step.
- ``describe_tool {name}``: one tool's MCP definition and its error table.
- ``validate_call {name, arguments, route_id?}``: ``/v1/validate``, with did-you-mean.

- ``call_tool {name, arguments, route_id?}``: ``POST /v1/call`` through ``app/gateway``; a
  failed call is a tool error whose structured content is the gateway's answer (its code,
  message, suggestion), never a JSON-RPC error with a raw Python message.

The namespace and the caller come from the HTTP request (``app/mcp/http.py``), which put
them in its ASGI scope.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from app.gateway.schemas import CallRequest
from app.loop.validation import validate_call
from app.mcp import arguments as args
from app.schemas import RouteCandidate, RouteRequest, RouteResponse, ValidateRequest
from app.tools.namespaces import require_known
from registry.calls import did_you_mean
from registry.errors import ToolReachError
from registry.formats import from_card

if TYPE_CHECKING:
    from app.services import Services

log = logging.getLogger("toolreach.mcp")
SCOPE_KEY = "toolreach.mcp"
INTERNAL_MESSAGE = "an internal error occurred; it has been logged"
# What search_tools adds to each definition from the route's candidate (those present).
CANDIDATE_FACTS = ("score", "confidence", "missing_required", "part")
INSTRUCTIONS = (
    "ToolReach finds the tools for a step. Call search_tools with the step in words; it "
    "returns the few tools that fit, each a full definition with its inputSchema. Check a "
    "call with validate_call (pass the search's route_id to record your choice)."
)


@dataclass(frozen=True, slots=True)
class McpScope:
    """What the HTTP layer decided for one request: whose it is and which namespace."""

    namespace: str
    role: str
    namespaces: frozenset[str] | None = None  # a scoped key's namespaces; None: every one
    key_id: str | None = None  # the caller's key (its own reports weigh fully: loop/trust.py)


class ToolInputError(Exception):
    """A meta-tool's arguments are wrong: answered as a tool error the model can correct."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


Result = dict[str, Any]
Parsed = TypeVar("Parsed", bound=BaseModel)
Run = Callable[["Services", McpScope, dict[str, Any]], Awaitable[Result]]


@dataclass(frozen=True)
class MetaTool:
    definition: types.Tool
    run: Run


def parse(model: type[Parsed], arguments: dict[str, Any]) -> Parsed:
    """``arguments`` as ``model``; wrong ones are a ToolInputError saying what to fix."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise ToolInputError(args.problems(exc)) from None


async def search_tools(services: Services, where: McpScope, arguments: dict[str, Any]) -> Result:
    found = parse(args.SearchArguments, arguments)
    requests = [
        parse(RouteRequest, {**step, "namespace": where.namespace, "format": "mcp"})
        for step in found.steps()
    ]
    answers = [_result(r) for r in await services.executor.route_many(requests, where.key_id)]
    if found.queries is None:
        return answers[0]
    return {"results": [{"query": q, **a} for q, a in zip(found.queries, answers, strict=True)]}


def _result(response: RouteResponse) -> Result:
    """One step's search result: its route, and its tools with the route's facts."""
    tools = [
        {**tool, **_facts(candidate)}
        for tool, candidate in zip(response.tools or [], response.candidates, strict=True)
    ]
    result: Result = {"route_id": response.route_id, "namespace": response.namespace}
    if response.parts:
        result["parts"] = response.parts
    return {**result, "tools": tools}


def _facts(candidate: RouteCandidate) -> dict[str, Any]:
    facts = candidate.model_dump(exclude_none=True)
    return {key: facts[key] for key in CANDIDATE_FACTS if key in facts}


async def describe_tool(services: Services, where: McpScope, arguments: dict[str, Any]) -> Result:
    name = parse(args.NameArguments, arguments).name
    card = services.index.card(where.namespace, name)
    if card is None:
        suggestions = did_you_mean(name, services.index.names(where.namespace))
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        raise ToolInputError(
            f"no tool {name!r} in namespace {where.namespace!r}{hint}",
            {"did_you_mean": suggestions},
        )
    described = from_card(card, "mcp")
    if card.errors:
        described["errors"] = [e.model_dump(exclude_none=True) for e in card.errors]
    return described


async def validate(services: Services, where: McpScope, arguments: dict[str, Any]) -> Result:
    call = parse(args.CallArguments, arguments)
    request = parse(ValidateRequest, {**call.model_dump(), "namespace": where.namespace})
    # Recording a validated call is a short database transaction: off the event loop.
    # Answered from memory; a named route's choice is queued for the background writer.
    result = validate_call(services.validated, services.index, request, visible=where.namespaces)
    return result.model_dump()


async def call(services: Services, where: McpScope, arguments: dict[str, Any]) -> Result:
    """Forward the call through the gateway (as ``POST /v1/call``): the tool's result, or a
    structured error (code, message, retryable, suggestion) the model can act on."""
    call = parse(args.CallArguments, arguments)
    request = parse(CallRequest, {**call.model_dump(), "namespace": where.namespace})
    result = await services.gateway.call(request)
    answer: Result = result.model_dump(mode="json")
    if not result.ok:
        raise ToolInputError("the call failed", answer)
    return answer


def _tool(
    name: str, description: str, schema: dict[str, Any], *, read_only: bool = True
) -> types.Tool:
    """A meta-tool's definition. The search, describe and validate tools are read-only: none
    changes anything the user has (that a search or a validated call is recorded for the
    statistics is not an effect on their world), so clients that ask before every
    non-read-only call need not ask before a search. ``call_tool`` runs a real tool: it may."""
    hints = types.ToolAnnotations(read_only_hint=read_only, open_world_hint=not read_only)
    return types.Tool(name=name, description=description, input_schema=schema, annotations=hints)


META_TOOLS: dict[str, MetaTool] = {
    "search_tools": MetaTool(
        _tool(
            "search_tools",
            "Find the tools for one step of your task. Give the step in words (`query`), or "
            "several steps at once (`queries`, up to 16), and any argument values you already "
            "know (`context`). Returns the best `k` tools (default 3) as full definitions "
            "(name, description, inputSchema) with a score and the required arguments still "
            "missing. A step that asks for several things is read as its `parts`, and the "
            "tools cover each part (each tool's `part`).",
            args.SEARCH_SCHEMA,
        ),
        search_tools,
    ),
    "describe_tool": MetaTool(
        _tool(
            "describe_tool",
            "The full definition of one tool by name (inputSchema, outputSchema, "
            "annotations) and its error codes with what to do next.",
            args.NAME_SCHEMA,
        ),
        describe_tool,
    ),
    "validate_call": MetaTool(
        _tool(
            "validate_call",
            "Check a tool call before making it: is the name real (if not, the closest real "
            "names) and are the arguments valid for its schema (if not, the exact problem "
            "and a suggestion).",
            args.CALL_SCHEMA,
        ),
        validate,
    ),
    "call_tool": MetaTool(
        _tool(
            "call_tool",
            "Call a tool found by search_tools, through ToolReach: its result, or an error "
            "with a code, whether a retry may help, and what to do next. Pass the search's "
            "route_id so the call counts as that step's choice.",
            args.CALL_SCHEMA,
            read_only=False,
        ),
        call,
    ),
}


def _scope(ctx: ServerRequestContext[Any, Any]) -> McpScope:
    request = ctx.request
    where = None if request is None else request.scope.get(SCOPE_KEY)
    if not isinstance(where, McpScope):  # only app/mcp/http.py serves this server
        raise MCPError(types.INTERNAL_ERROR, "request reached the MCP server without its scope")
    return where


def _answer(result: Result, *, error: bool = False) -> types.CallToolResult:
    """Structured content, and the same JSON as text for clients that read only text."""
    text = json.dumps(result, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=result,
        is_error=error,
    )


def build_server(services: Services) -> Server[Any]:
    """The low-level SDK server: tools/list is the meta-tools, tools/call runs one."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.definition for tool in META_TOOLS.values()])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = META_TOOLS.get(params.name)
        if tool is None:
            known = ", ".join(META_TOOLS)
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}; tools: {known}")
        where = _scope(ctx)
        try:
            # /mcp in a namespace that never held a tool (the key's, or default): a tool
            # error naming it, with did-you-mean (/mcp/<namespace> was a 404 already).
            require_known(services.index, where.namespace, where.namespaces)
            return _answer(await tool.run(services, where, params.arguments or {}))
        except ToolInputError as exc:
            return _answer({"error": str(exc), **exc.details}, error=True)
        except ToolReachError as exc:  # e.g. overloaded: the model may retry
            details = exc.details if isinstance(exc.details, dict) else {}
            return _answer({"error": exc.message, "code": exc.code, **details}, error=True)
        except MCPError:
            raise
        except Exception:  # a bug: the one error shape of /v1, never the raw Python text
            log.exception("MCP tools/call %s failed", params.name)
            return _answer({"error": INTERNAL_MESSAGE, "code": "internal"}, error=True)

    return Server(
        "toolreach",
        version="0.1.0",
        title="ToolReach",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
