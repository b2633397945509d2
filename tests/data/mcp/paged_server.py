"""A small MCP server for the re-sync tests (stdio): its tools are read from the JSON file
named by TOOLS_FILE, listed two per page (so the client must follow nextCursor); the tool
``reload`` reads the file again and sends notifications/tools/list_changed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

PAGE = 2
TOOLS: list[dict[str, Any]] = []


def load() -> None:
    TOOLS[:] = json.loads(Path(os.environ["TOOLS_FILE"]).read_text())


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    page = [types.Tool.model_validate(t) for t in TOOLS[start : start + PAGE]]
    following = str(start + PAGE) if start + PAGE < len(TOOLS) else None
    return types.ListToolsResult(tools=page, next_cursor=following)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "reload":
        load()
        await ctx.session.send_tool_list_changed()
    text = json.dumps({"tool": params.name, "arguments": params.arguments or {}})
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def main() -> None:
    load()
    server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
