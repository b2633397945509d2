"""One ``tools/call`` on a live MCP source, and what its failures mean.

The session is the pool's (app/gateway/mcp_pool.py); this module words the outcome. What the
server answered says it is up, even when the answer is an error: the tool's own error
(``tool_error``), arguments it refused (JSON-RPC ``-32602``: ``invalid_arguments``, the
caller's error), an answer too large (``response_too_large``) or nested too deep
(``response_too_deep``). What counts against the
source: it cannot be reached or its transport closed (``unreachable`` or ``timeout``, with
the cause: app/sources/causes.py), an error of its own (``protocol_error``:
``-32603`` and the rest), an answer the SDK could not read.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    CallToolResult,
)

from app.gateway.failures import (
    INLINE_BYTES,
    CallFailed,
    deeper_than,
    reason,
    too_deep,
    too_large,
    unreachable,
    withheld,
)
from app.gateway.mcp_pool import McpPool
from app.sources.causes import unreached
from app.sources.masking import SecretEchoed, masked_answer
from app.sources.outbound import TOO_LARGE, OutboundRefused
from app.sources.schemas import SourceConfig
from app.sources.secrets import SecretMissing

# What the SDK's JSON parser (pydantic's) says of JSON nested deeper than it reads.
DEEP_JSON = "recursion limit exceeded"


async def call_tool(
    pool: McpPool,
    source: str,
    config: SourceConfig,
    tool: str,
    arguments: dict[str, Any],
    max_bytes: int,
) -> dict[str, Any]:
    """The tool's result (its secrets masked); CallFailed for every failure."""
    try:
        result, secrets = await pool.call(source, config, tool, arguments)
    except (SecretMissing, OutboundRefused, TimeoutError):
        raise  # worded by the gateway, as for an HTTP source
    except MCPError as exc:
        raise _error_answer(exc) from None
    except Exception as exc:  # unreached; a malformed answer, too large, the SDK's checks
        found = unreached(exc)
        if found is not None:
            raise unreachable(found, "the MCP server") from None
        if too_large(exc):
            raise CallFailed("response_too_large", reason(exc), answered=True) from None
        if DEEP_JSON in reason(exc):
            raise too_deep("the MCP server's answer") from None
        message = f"the MCP server's answer is unusable: {reason(exc)}"
        raise CallFailed("protocol_error", message, source_fault=True) from None
    dumped = _dumped(result)
    size = len(json.dumps(dumped))
    if size > max_bytes:  # a stdio server's answer is not capped as it comes
        raise CallFailed("response_too_large", f"{TOO_LARGE} {max_bytes} bytes", answered=True)
    if size <= INLINE_BYTES:
        answer = _masked(dumped, secrets)
    else:
        answer = await anyio.to_thread.run_sync(_masked, dumped, secrets)
    answer.pop("_meta", None)
    answer.pop("resultType", None)
    if result.is_error:
        texts = [c.get("text", "") for c in answer.get("content", []) if isinstance(c, dict)]
        message = " ".join(texts) or "the tool reported an error"
        raise CallFailed("tool_error", message, details=answer, answered=True)
    return answer


def _masked(dumped: dict[str, Any], secrets: list[str]) -> dict[str, Any]:
    try:
        answer: dict[str, Any] = masked_answer(dumped, secrets)
    except SecretEchoed:
        raise withheld() from None
    return answer


def _dumped(result: CallToolResult) -> dict[str, Any]:
    """The result as JSON; ``response_too_deep`` past the gateway's bound (the SDK's parser
    refuses much deeper JSON itself: ``DEEP_JSON``)."""
    try:
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    except ValueError:  # pydantic's own bound on depth
        raise too_deep("the MCP server's answer") from None
    if deeper_than(dumped):
        raise too_deep("the MCP server's answer")
    return dumped


def _error_answer(exc: MCPError) -> CallFailed:
    """A JSON-RPC error as the gateway words it."""
    if TOO_LARGE in exc.message:
        return CallFailed("response_too_large", exc.message, answered=True)
    if exc.code == INVALID_PARAMS:
        problem = f"the MCP server refused the arguments: {exc.message}"
        details = [{"path": "", "message": exc.message, "suggestion": None}]
        return CallFailed("invalid_arguments", problem, details=details, answered=True)
    if exc.code == PARSE_ERROR and DEEP_JSON in exc.message:
        return too_deep("the MCP server's answer")
    found = unreached(exc)
    if found is not None:  # its transport closed (the pool chains why, when it knows)
        return unreachable(found, "the MCP server")
    if exc.code == REQUEST_TIMEOUT:
        message = f"the MCP server did not answer in time: {exc.message}"
        return CallFailed("timeout", message, retryable=True, source_fault=True)
    message = f"the MCP server answered error {exc.code}: {exc.message}"
    return CallFailed("protocol_error", message, source_fault=True)
