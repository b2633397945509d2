"""Hit-rate statistics and look-alike tools, for admins and read-only dashboard keys."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response

from app.api.error_handlers import ERROR_SHAPE
from app.api.tools import KeyNamespaces
from app.capacity.slots import ReportSlot
from app.deps import EventsDep, IndexDep, LookalikesDep, SessionDep, ViewerDep
from app.loop.stats import StatsFilter, StatsReport, requested_stats
from app.schemas import IsoTime
from app.tools.lookalike_pairs import LookalikeList
from app.tools.lookalikes import MAX_PAIRS, lookalikes_json
from app.tools.namespaces import require_known

router = APIRouter(prefix="/v1", tags=["stats"])
ERRORS: dict[int | str, dict[str, Any]] = {c: ERROR_SHAPE for c in (401, 403, 404, 422, 503)}


@router.get("/stats", response_model=StatsReport, responses=ERRORS)
def stats(
    session: SessionDep,
    index: IndexDep,
    events: EventsDep,
    viewer: ViewerDep,
    _slot: ReportSlot,
    namespace: KeyNamespaces = None,
    tool: Annotated[str | None, Query(max_length=256)] = None,
    since: Annotated[IsoTime | None, Query(description="ISO 8601 time, inclusive")] = None,
    until: Annotated[IsoTime | None, Query(description="ISO 8601 time, exclusive")] = None,
    bucket: Literal["hour", "day"] = "day",
) -> StatsReport:
    """Routes, feedback, hit@1, hit@k, misses, none-fit, latency, per tool, confusions; of
    the key's namespaces only. A `namespace` that never held a tool the key may see (a
    typo, or one out of its scope) is a 404 naming it, with did-you-mean."""
    namespace = require_known(index, namespace, viewer.namespaces)
    selected = StatsFilter(namespace, tool, since, until, bucket, viewer.namespaces)
    return requested_stats(session, selected, dropped_events=events.dropped)


@router.get("/lookalikes", response_model=LookalikeList, responses=ERRORS)
def lookalikes(
    index: IndexDep,
    cache: LookalikesDep,
    viewer: ViewerDep,
    _slot: ReportSlot,
    namespace: KeyNamespaces = None,
    threshold: Annotated[
        float, Query(ge=0.0, le=1.0, description="pairs below the kept floor are never listed")
    ] = 0.8,
    limit: Annotated[int, Query(ge=1, le=MAX_PAIRS)] = 50,
) -> Response:
    """Pairs of tools whose cards are so alike that the model and the router confuse them;
    of the key's namespaces only. Read from a cache kept in the background: ``complete`` is
    false while a namespace's pairs are still being computed. A `namespace` that never held
    a tool the key may see is a 404 naming it, with did-you-mean."""
    namespace = require_known(index, namespace, viewer.namespaces)
    body = lookalikes_json(cache, namespace, threshold, limit, viewer.namespaces)
    return Response(body, media_type="application/json")
