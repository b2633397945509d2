"""``POST /v1/route`` with the loop closed: rank with the usage prior, time it, record it."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from app.loop.events import RouteEventCandidateRecord, RouteEventRecord, stored_query
from app.route.service import RouteResult, rank_step, route_step
from app.routing import RouterConfig
from app.routing.signals import Cosines
from app.schemas import RouteRequest, RouteResponse

if TYPE_CHECKING:
    from app.services import Services


@lru_cache(maxsize=8)
def config_weights(config: RouterConfig) -> dict[str, Any]:
    """The router's weights as stored with each event (the config is frozen, so cached)."""
    return dataclasses.asdict(config)


def event_record(
    request: RouteRequest,
    result: RouteResult,
    seconds: float,
    *,
    hash_queries: bool,
    config: RouterConfig,
) -> RouteEventRecord:
    response = result.response
    return RouteEventRecord(
        route_id=response.route_id,
        created_at=datetime.now(UTC),
        namespace=request.namespace,
        query=stored_query(request.query, hashed=hash_queries),
        k=request.k,
        latency_ms=round(seconds * 1000, 3),
        model=response.model,
        candidates=tuple(
            RouteEventCandidateRecord(c.name, c.score, dict(c.stages)) for c in response.candidates
        ),
        weights=config_weights(config),
    )


def route_and_record(request: RouteRequest, services: Services) -> RouteResponse:
    """Rank the step's tools; hand the event to the background writer; count it."""
    started = time.perf_counter()
    config = services.index.config
    prior = services.prior.get(request.namespace)
    result = route_step(
        request, services.index, services.encoder, config, prior=prior, cosines=services.cosines
    )
    return record(request, result, started, services)


def rank_and_record(
    request: RouteRequest,
    query_vec: np.ndarray | None,
    embed_seconds: float,
    started: float,
    services: Services,
    cosines: Cosines | None = None,
    texts: Sequence[str] | None = None,
) -> RouteResponse:
    """As route_and_record, with the step's vectors already made (app/route/executor.py)
    from its ``texts``, and the cosine product too if ``cosines`` hands it back."""
    config = services.index.config
    result = rank_step(
        request,
        services.index,
        query_vec,
        services.encoder.name,
        config,
        services.prior.get(request.namespace),
        cosines or services.cosines,
        embed_seconds,
        texts,
    )
    return record(request, result, started, services)


def record(
    request: RouteRequest, result: RouteResult, started: float, services: Services
) -> RouteResponse:
    """Hand the route's event to the background writer and count it; ``started`` is when
    the request arrived (``time.perf_counter``), so a wait in a queue counts as latency."""
    config = services.index.config
    seconds = time.perf_counter() - started
    hashed = services.settings.hash_queries
    services.events.submit(
        event_record(request, result, seconds, hash_queries=hashed, config=config)
    )
    services.metrics.observe_route(
        request.namespace, seconds, result.timings, bool(result.candidates)
    )
    return result.response
