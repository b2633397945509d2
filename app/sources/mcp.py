"""A live MCP server as a source: connect (streamable HTTP or a stdio command, with the
mcp SDK's client), list its tools page by page, and make each a card and a binding.

A listing is bounded as it comes: each page over HTTP by the largest answer the gateway
takes (``TOOLREACH_GATEWAY_MAX_RESPONSE_BYTES``, counted as its bytes arrive), the whole by
``TOOLREACH_SOURCE_MAX_TOOLS`` tools and ``TOOLREACH_SOURCE_MAX_LISTING_BYTES`` bytes of tool
definitions, checked at every page before the next is asked for, and by ``MAX_PAGES``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PaginatedRequestParams, Tool
from pydantic import ValidationError

from app.sources.binding import McpBinding
from app.sources.headers import header_problem
from app.sources.openapi import tool_name
from app.sources.outbound import OutboundRefused, OutboundRules, mcp_http_client
from app.sources.schemas import SourceConfig
from app.sources.secrets import env_problem, resolve_all
from registry.card import ToolCard
from registry.formats import FormatError, to_card_data

MAX_PAGES = 100  # tools/list pages read before a server is taken to loop


@dataclass(frozen=True)
class Reach:
    """What connecting to a source needs besides its config."""

    rules: OutboundRules
    secret_dirs: tuple[str, ...]
    timeout: float
    stdio_allowed: bool
    max_tools: int = 5000
    max_listing_bytes: int = 16 * 1_048_576


class ListingTooLarge(Exception):
    """An MCP server lists more than a source may hold; the message says which bound."""


@dataclass
class Connected:
    session: ClientSession
    secrets: list[str] = field(default_factory=list)


@asynccontextmanager
async def connect(
    config: SourceConfig, reach: Reach, on_message: MessageHandlerFnT | None = None
) -> AsyncIterator[Connected]:
    """An initialized session with the source's MCP server, closed on exit."""
    if config.url is not None:
        await reach.rules.check_url(config.url)
        headers = resolve_all(config.headers, reach.secret_dirs, check=header_problem)
        # One bound on an answer, the gateway's: not the SDK's own on one SSE event (1 MiB).
        largest = reach.rules.max_response_bytes
        async with (
            mcp_http_client(reach.rules, timeout=reach.timeout, headers=headers.values) as http,
            streamable_http_client(config.url, http_client=http, max_sse_event_size=largest) as (
                read,
                write,
            ),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            with anyio.fail_after(reach.timeout):
                await session.initialize()
            yield Connected(session, headers.secrets)
        return
    if not reach.stdio_allowed:
        raise OutboundRefused(
            "MCP sources run as local commands are off: set TOOLREACH_SOURCE_STDIO_ALLOWED=true"
        )
    assert config.command is not None  # SourceCreate checks a source has one
    env = resolve_all(config.env, reach.secret_dirs, check=env_problem)
    params = StdioServerParameters(
        command=config.command[0], args=config.command[1:], env=env.values
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        with anyio.fail_after(reach.timeout):
            await session.initialize()
        yield Connected(session, env.secrets)


async def list_all_tools(session: ClientSession, reach: Reach) -> list[Tool]:
    """Every tool, following ``nextCursor``; ListingTooLarge past a bound."""
    tools: list[Tool] = []
    size = 0
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        with anyio.fail_after(reach.timeout):
            page = await session.list_tools(params=params)
        tools.extend(page.tools)
        size += sum(len(tool.model_dump_json(by_alias=True)) for tool in page.tools)
        if len(tools) > reach.max_tools:
            raise ListingTooLarge(
                f"the server lists more than {reach.max_tools} tools (TOOLREACH_SOURCE_MAX_TOOLS)"
            )
        if size > reach.max_listing_bytes:
            raise ListingTooLarge(
                f"the server's tools take more than {reach.max_listing_bytes} bytes "
                "(TOOLREACH_SOURCE_MAX_LISTING_BYTES)"
            )
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise ListingTooLarge(f"the server's tools/list went on for more than {MAX_PAGES} pages")


@dataclass
class Listed:
    cards: list[tuple[ToolCard, McpBinding]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)


def to_cards(tools: list[Tool], *, source: str, namespace: str, prefix: str) -> Listed:
    """Each MCP tool as a card (through the MCP format every import reads) and a binding:
    its upstream name, and whether a call to it is safe to repeat."""
    listed = Listed()
    for tool in tools:
        item = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        item.pop("_meta", None)
        name = tool_name(tool.name, prefix)
        try:
            data = to_card_data({**item, "name": name}, namespace=namespace)
            data["source"] = {"name": source, "ref": tool.name}
            card = ToolCard.model_validate(data)
        except (FormatError, ValidationError) as exc:
            reason = str(exc).splitlines()[0] if isinstance(exc, FormatError) else _first(exc)
            listed.refused.append({"tool": tool.name, "name": name, "reason": reason})
            continue
        hints = tool.annotations
        safe = bool(hints and (hints.read_only_hint or hints.idempotent_hint))
        listed.cards.append((card, McpBinding(tool=tool.name, safe=safe)))
    return listed


def _first(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
