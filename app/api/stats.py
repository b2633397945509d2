"""Hit-rate statistics and look-alike tools, for admins and read-only dashboard keys."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel

from app.api.error_handlers import ERROR_SHAPE
from app.deps import ServicesDep, SessionDep, ViewerDep
from app.loop.stats import StatsFilter, StatsReport, compute_stats
from app.schemas import Namespace
from app.tools.lookalikes import LookalikePair, lookalikes_in
from registry.errors import InvalidInput

router = APIRouter(prefix="/v1", tags=["stats"])
ERRORS: dict[int | str, dict[str, Any]] = {c: ERROR_SHAPE for c in (401, 403, 422, 503)}


class LookalikeList(BaseModel):
    pairs: list[LookalikePair]


def _utc(moment: datetime | None) -> datetime | None:
    """A time without an offset is read as UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


@router.get("/stats", response_model=StatsReport, responses=ERRORS)
def stats(
    session: SessionDep,
    services: ServicesDep,
    _viewer: ViewerDep,
    namespace: Annotated[Namespace | None, Query()] = None,
    tool: Annotated[str | None, Query(max_length=256)] = None,
    since: Annotated[datetime | None, Query(description="ISO time, inclusive")] = None,
    until: Annotated[datetime | None, Query(description="ISO time, exclusive")] = None,
    bucket: Literal["hour", "day"] = "day",
) -> StatsReport:
    """Routes, feedback, hit@1, hit@k, misses, none-fit, latency, per tool, confusions."""
    since, until = _utc(since), _utc(until)
    if since is not None and until is not None and since >= until:
        raise InvalidInput("`since` must be before `until`")
    selected = StatsFilter(namespace, tool, since, until, bucket)
    return compute_stats(session, selected, dropped_events=services.events.dropped)


@router.get("/lookalikes", response_model=LookalikeList, responses=ERRORS)
def lookalikes(
    services: ServicesDep,
    _viewer: ViewerDep,
    namespace: Annotated[Namespace | None, Query(description="all namespaces if absent")] = None,
    threshold: Annotated[float, Query(ge=0.0, le=1.0)] = 0.8,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> LookalikeList:
    """Pairs of tools whose cards are so alike that the model and the router confuse them."""
    pairs = lookalikes_in(services.index, namespace, threshold, limit)
    return LookalikeList(pairs=pairs)
