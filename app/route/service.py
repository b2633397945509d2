"""Routing one agent step: ``route_step`` embeds it, ranks the namespace's snapshot, shapes
the answer and records the route. It is the one way to route a step; the API reaches it
through the executor (app/route/executor.py), which embeds a batch of steps at once.

The route never touches the database: the event goes to the background writer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numpy as np

from app.loop.events import RouteEventCandidateRecord, RouteEventRecord, stored_query
from app.loop.trust import ANONYMOUS
from app.route.answer import route_response
from app.route.deps import RouteDeps
from app.routing import Candidate, RouteOptions, RouterConfig, query_texts
from app.routing.signals import Cosines
from app.schemas import RouteRequest, RouteResponse
from app.tools.live_index import IndexManager


@dataclass(frozen=True)
class EmbeddedStep:
    """A step already embedded by its caller (the executor embeds a batch at once)."""

    texts: Sequence[str]  # what was embedded: step_texts(request, index)
    vectors: np.ndarray | None  # one row per text; None when there were no texts
    seconds: float  # the embedding's share of the route
    cosines: Cosines | None = None  # a product shared with the batch; None: the router's


@dataclass(frozen=True)
class RouteResult:
    """A ranked, shaped answer before it is recorded."""

    response: RouteResponse
    candidates: list[Candidate]
    timings: dict[str, float] = field(default_factory=dict)  # seconds: "embed", "rank"


def step_texts(request: RouteRequest, index: IndexManager) -> list[str]:
    """What to embed for this step: the whole step, then each of its parts (none for an
    empty namespace, which is answered without a model call)."""
    snapshot = index.get(request.namespace)
    if snapshot is None or not len(snapshot.cards):
        return []
    return query_texts(request.query, split=request.split)


def route_step(
    request: RouteRequest,
    deps: RouteDeps,
    *,
    step: EmbeddedStep | None = None,
    started: float | None = None,
    key_id: str | None = None,
) -> RouteResponse:
    """The top-k tools for one step, its event handed to the background writer and counted.

    ``step``: the step's vectors if the caller already made them (else it is embedded here).
    ``started``: when the request arrived (``time.perf_counter``; default now), so a wait
    in a queue counts as latency. ``key_id``: the caller's key: its own reports weigh
    fully in its routes, other keys' as far as keys agree (app/loop/trust.py); recorded.
    """
    started = time.perf_counter() if started is None else started
    step = _embed_step(request, deps) if step is None else step
    result = rank_step(request, deps, step, key_id)
    _record(request, result, started, deps, key_id)
    return result.response


def _embed_step(request: RouteRequest, deps: RouteDeps) -> EmbeddedStep:
    """Embed the step's texts with the service's encoder, one model call."""
    started = time.perf_counter()
    texts = step_texts(request, deps.index)
    vectors = np.asarray(deps.encoder.encode(texts), dtype=np.float32) if texts else None
    return EmbeddedStep(texts, vectors, time.perf_counter() - started)


def route_options(request: RouteRequest, key_id: str | None) -> RouteOptions:
    """What the request asks of the ranking, and who asks (app/loop/trust.py)."""
    return RouteOptions(
        k=request.k,
        context=request.context,
        tags=request.tags,
        min_score=request.min_score,
        min_confidence=request.min_confidence,
        split=request.split,
        key=key_id or ANONYMOUS,
    )


def rank_step(
    request: RouteRequest, deps: RouteDeps, step: EmbeddedStep, key_id: str | None = None
) -> RouteResult:
    """Rank and shape the answer of an embedded step, recording nothing: the part of
    ``route_step`` that benchmarks time alone. Never touches the database: the namespace's
    view is built from the caches (app/route/views.py)."""
    current = deps.views.get(request.namespace)
    candidates: list[Candidate] = []
    timings: dict[str, float] = {}
    # A snapshot swapped in since step_texts (a first card registered meanwhile) is ranked
    # without an embedding rather than not at all.
    if current is not None:
        started = time.perf_counter()
        candidates = deps.router.route(
            current.view,
            request.query,
            step.vectors,
            route_options(request, key_id),
            texts=step.texts or None,
            cosines=step.cosines,
        )
        timings = {"embed": step.seconds, "rank": time.perf_counter() - started}
    read = list(step.texts[1:]) if len(step.texts) > 1 else None
    snapshot = None if current is None else current.snapshot
    response = route_response(request, snapshot, candidates, deps.encoder.name, read)
    return RouteResult(response, candidates, timings)


@lru_cache(maxsize=8)
def _config_weights(config: RouterConfig) -> dict[str, Any]:
    """The router's weights as stored with each event (the config is frozen, so cached)."""
    return dataclasses.asdict(config)


def _event_record(
    request: RouteRequest,
    result: RouteResult,
    seconds: float,
    deps: RouteDeps,
    key_id: str | None = None,
) -> RouteEventRecord:
    response = result.response
    return RouteEventRecord(
        route_id=response.route_id,
        created_at=datetime.now(UTC),
        namespace=request.namespace,
        query=stored_query(request.query, hashed=deps.settings.hash_queries),
        k=request.k,
        latency_ms=round(seconds * 1000, 3),
        model=response.model,
        candidates=tuple(
            RouteEventCandidateRecord(c.name, c.score, dict(c.stages)) for c in response.candidates
        ),
        weights=_config_weights(deps.index.config),
        key_id=key_id,
    )


def _record(
    request: RouteRequest,
    result: RouteResult,
    started: float,
    deps: RouteDeps,
    key_id: str | None = None,
) -> None:
    """Hand the route's event to the background writer and count it."""
    seconds = time.perf_counter() - started
    deps.events.submit(_event_record(request, result, seconds, deps, key_id))
    deps.metrics.observe_route(request.namespace, seconds, result.timings, bool(result.candidates))
