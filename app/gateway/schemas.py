"""A forwarded call and its answer, as /v1/call and MCP's call_tool take and give them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from registry.card import NAMESPACE_PATTERN
from registry.nul import NoNul


class CallRequest(NoNul):
    """One tool call to forward to the tool's source."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=256)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    namespace: Annotated[str, Field(pattern=NAMESPACE_PATTERN)] = "default"
    route_id: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None,
        description="the route the tool came from: the call is recorded as its report",
    )
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="at most TOOLREACH_GATEWAY_TIMEOUT_SECONDS"
    )


class CallError(BaseModel):
    """Why a call did not give the tool's result, and what to do next."""

    code: str = Field(
        description="the upstream's code (an HTTP status, 'tool_error') or the gateway's: "
        "unknown_tool, invalid_arguments, not_callable, timeout, circuit_open, overloaded, "
        "unreachable, outbound_refused, redirect_refused, response_too_large, protocol_error, "
        "credentials_missing, loop_refused, internal"
    )
    message: str
    retryable: bool = Field(description="whether the same call may succeed if tried again")
    suggestion: str | None = Field(
        default=None, description="the card's suggestion for this code, else the gateway's"
    )
    details: Any = None


class CallResult(BaseModel):
    """The tool's result (``ok``) or a structured error."""

    ok: bool
    name: str
    namespace: str
    result: Any = None
    error: CallError | None = None
    route_id: str | None = None
    attempts: int = Field(default=0, description="requests sent upstream")
    latency_ms: float = 0.0


class BatchCallRequest(NoNul):
    """Several calls, run at once; each answers on its own (one failing fails only itself)."""

    model_config = ConfigDict(extra="forbid")

    calls: list[CallRequest] = Field(min_length=1, max_length=1000)


class BatchCallResult(BaseModel):
    results: list[CallResult]
    succeeded: int
    failed: int
