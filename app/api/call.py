"""POST /v1/call: call a tool through ToolReach; its source answers (or a structured error)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from app.api.error_handlers import ERROR_SHAPE
from app.deps import AgentDep, GatewayDep, IndexDep, SettingsDep
from app.gateway.schemas import BatchCallRequest, BatchCallResult, CallRequest, CallResult
from app.sources.outbound import HOP_HEADER
from app.tools.namespaces import in_namespace
from registry.errors import InvalidInput

router = APIRouter(prefix="/v1", tags=["call"])
ERRORS: dict[int | str, dict[str, Any]] = {
    code: ERROR_SHAPE for code in (400, 401, 403, 404, 413, 422, 503)
}


@router.post("/call", response_model=CallResult, responses=ERRORS)
async def call_tool(
    body: CallRequest, request: Request, gateway: GatewayDep, index: IndexDep, agent: AgentDep
) -> CallResult:
    """Validate the call, forward it to the tool's source, answer with its result or a
    structured error (`ok` false: code, message, retryable, suggestion).

    With a `route_id` the call is that route's report: no `/v1/feedback` needed. A
    namespace that never held a tool the key may see is a 404 naming it, with did-you-mean
    (a key limited to namespaces gets it for any other, as for one that does not exist).
    """
    hop = HOP_HEADER.lower() in request.headers
    return await gateway.call(in_namespace(agent, body, index), hop=hop)


@router.post("/call/batch", response_model=BatchCallResult, responses=ERRORS)
async def call_tools(
    body: BatchCallRequest,
    request: Request,
    gateway: GatewayDep,
    index: IndexDep,
    settings: SettingsDep,
    agent: AgentDep,
) -> BatchCallResult:
    """Several calls at once; each result is the tool's or its own structured error."""
    limit = settings.gateway.batch_max
    if len(body.calls) > limit:
        raise InvalidInput(f"at most {limit} calls in one batch (TOOLREACH_GATEWAY_BATCH_MAX)")
    hop = HOP_HEADER.lower() in request.headers
    calls = [in_namespace(agent, call, index) for call in body.calls]  # else 404
    results = await gateway.call_batch(calls, hop=hop)
    succeeded = sum(r.ok for r in results)
    return BatchCallResult(results=results, succeeded=succeeded, failed=len(results) - succeeded)
