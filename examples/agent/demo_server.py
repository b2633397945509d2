"""A small MCP server of our own, so the gateway path runs end to end out of the box: the six
tools of demo_tools.py, each listed with its card's description and input schema from the
demo catalog (app/demo/catalog.json), over streamable HTTP at ``/mcp``.

    .venv/bin/python examples/agent/demo_server.py --port 8001    # http://127.0.0.1:8001/mcp

A tool's own failure (``ToolFailure``) is an MCP tool error (``isError``) whose text says
the code, what happened and what the card says to do next, e.g. ``NOT_YET_SHIPPED: order
o100999 has not been handed to a carrier. Call get_order_details ...``. It needs the MCP
SDK and uvicorn (the service's environment has both); ToolReach itself is not imported.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp.types as types
import uvicorn
from demo_tools import REGISTRY, ToolFailure
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

CATALOG = Path(__file__).resolve().parents[2] / "app" / "demo" / "catalog.json"
CARDS = {
    card["name"]: card
    for card in json.loads(CATALOG.read_text(encoding="utf-8"))
    if card["name"] in REGISTRY
}


def tool_definitions() -> list[types.Tool]:
    """Each tool as its card describes it (a read-only hint: none changes anything)."""
    return [
        types.Tool(
            name=name,
            description=card["description"],
            input_schema=card.get("parameters") or {"type": "object"},
            annotations=types.ToolAnnotations(read_only_hint=True),
        )
        for name, card in CARDS.items()
    ]


def failure_text(name: str, failure: ToolFailure) -> str:
    """The code, the message and the card's suggestion for that code, in one line."""
    rows = {row["code"]: row for row in CARDS[name].get("errors", [])}
    advice = rows.get(failure.code, {}).get("suggestion")
    return f"{failure.code}: {failure}." + (f" {advice}" if advice else "")


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tool_definitions())


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name, arguments = params.name, params.arguments or {}
    if name not in CARDS:
        text = f"UNKNOWN_TOOL: no tool {name!r}; tools: {', '.join(CARDS)}"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=True
        )
    try:
        result = REGISTRY[name](**arguments)
    except ToolFailure as failure:
        text = failure_text(name, failure)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=True
        )
    except TypeError as exc:  # arguments the function does not take
        text = f"INVALID_ARGUMENT: {exc}"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=True
        )
    text = json.dumps(result, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=result
    )


def make_app() -> Starlette:
    """The server at /mcp: stateless, JSON answers (any client, no session to keep)."""
    server = Server("toolreach-demo-tools", on_list_tools=list_tools, on_call_tool=call_tool)
    sessions = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)

    class Endpoint:  # an ASGI object: Route hands it the raw scope, as the transport needs
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await sessions.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with sessions.run():
            yield

    return Starlette(routes=[Route("/mcp", Endpoint(), methods=["POST"])], lifespan=lifespan)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8001, help="TCP port (8001)")
    args = parser.parse_args(argv)
    uvicorn.run(make_app(), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
