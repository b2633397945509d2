"""GET /metrics: Prometheus text format; open unless TOOLREACH_METRICS_PUBLIC is false."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST

from app.deps import Caller, CallerDep, MetricsDep, SettingsDep, require_unscoped_viewer

router = APIRouter(tags=["health"])


async def metrics_access(caller: CallerDep, settings: SettingsDep) -> Caller:
    """Open by default (no query text or tool name is in any series); else a viewer key
    limited to no namespace (the series cover every namespace)."""
    if settings.metrics_public:
        return caller
    return await require_unscoped_viewer(caller)


@router.get("/metrics", response_class=Response)
def metrics(metrics: MetricsDep, _caller: Annotated[Caller, Depends(metrics_access)]) -> Response:
    """Route latency and stage timings, routes and feedback by outcome, index size, drops."""
    return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)
