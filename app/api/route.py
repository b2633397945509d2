"""POST /v1/route: the top-k tools for one agent step; POST /v1/route/batch: several."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.error_handlers import ERROR_SHAPE
from app.deps import AgentDep, ExecutorDep, IndexDep
from app.schemas import RouteBatchRequest, RouteBatchResponse, RouteRequest, RouteResponse
from app.tools.namespaces import in_namespace

router = APIRouter(prefix="/v1", tags=["route"])
ERRORS: dict[int | str, dict[str, Any]] = {
    c: ERROR_SHAPE for c in (400, 401, 403, 404, 413, 422, 503)
}


@router.post(
    "/route",
    response_model=RouteResponse,
    response_model_exclude_none=True,
    responses=ERRORS,
)
async def route_tools(
    request: RouteRequest, index: IndexDep, executor: ExecutorDep, caller: AgentDep
) -> RouteResponse:
    """Rank the namespace's tools for this step; the answer says why each was chosen.

    The answer's `route_id` names this route in `/v1/feedback` and `/v1/validate`. A
    namespace that never held a tool the key may see is a 404 naming it, with did-you-mean
    (a key limited to namespaces gets it for any other, before anything is ranked); with no
    `namespace`, a key limited to one routes in that one.
    """
    request = in_namespace(caller, request, index)
    return await executor.route(request, caller.key_id)  # batched with others


@router.post(
    "/route/batch",
    response_model=RouteBatchResponse,
    response_model_exclude_none=True,
    responses=ERRORS,
)
async def route_batch(
    batch: RouteBatchRequest, index: IndexDep, executor: ExecutorDep, caller: AgentDep
) -> RouteBatchResponse:
    """Rank the tools for several steps at once (up to 16): one answer per step, in order.

    Each step is routed as `POST /v1/route` routes it and recorded on its own (its own
    `route_id`); the steps share one model call. A step in a namespace outside the key's
    scope, or one that never held a tool, makes the whole batch a 404, before anything is
    ranked.
    """
    steps = [in_namespace(caller, step, index) for step in batch.steps]
    return RouteBatchResponse(answers=await executor.route_many(steps, caller.key_id))
