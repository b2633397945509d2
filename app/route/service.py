"""Routing one agent step: embed the query, rank the namespace's snapshot, shape the answer."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.embedding.encoders import Encoder
from app.routing import ALL_STAGES, Candidate, RouterConfig, query_texts, route
from app.routing.pipeline import SCORE_DECIMALS
from app.routing.signals import Cosines, gemv_rows
from app.schemas import (
    InvalidContext,
    RouteCandidate,
    RouteRequest,
    RouteResponse,
    StepRead,
    TokenEstimate,
)
from app.tools.live_index import IndexManager, Snapshot
from registry.formats import exported_name, from_card

TOKEN_METHOD = "ceil(characters / 4) of the compact JSON of the tool list (OpenAI's rule of thumb)"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def estimate_tokens(tools: Iterable[dict[str, Any]]) -> int:
    """ceil(characters / 4) of the compact JSON list, counted one tool at a time.

    Equal to measuring ``json.dumps(list(tools))`` without ever building the whole list or
    its text (a namespace of 100,000 tools would briefly hold hundreds of MB).
    """
    chars, count = 2, 0  # the brackets
    for tool in tools:
        chars += len(_compact(tool))
        count += 1
    return math.ceil((chars + max(count - 1, 0)) / 4)  # plus the commas


@dataclass(frozen=True)
class RouteResult:
    response: RouteResponse
    candidates: list[Candidate]
    timings: dict[str, float] = field(default_factory=dict)  # seconds: "embed", "rank"


class _RandomIds:
    """Random 128-bit ids as hex (what ``uuid.uuid4().hex`` gives, less the version bits),
    cut from a buffer of ``os.urandom`` refilled 4 KiB at a time: one system call per 256
    ids instead of one each (right after a model call one cost ~17 µs here)."""

    def __init__(self, ids_per_refill: int = 256) -> None:
        self._size = 16 * ids_per_refill
        self._buffer = b""
        self._at = 0
        self._lock = threading.Lock()
        # A forked worker must not cut the same bytes as its parent.
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._buffer, self._at, self._lock = b"", 0, threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            if self._at >= len(self._buffer):
                self._buffer, self._at = os.urandom(self._size), 0
            start = self._at
            self._at += 16
            return self._buffer[start : start + 16].hex()


new_route_id = _RandomIds()


def _namespace_tokens(snapshot: Snapshot, fmt: str) -> int:
    """Tokens of the whole namespace in `fmt`, memoised on the immutable snapshot."""
    cache: dict[str, int] = snapshot.memo.setdefault("tokens", {})
    if fmt not in cache:
        cache[fmt] = estimate_tokens(from_card(c, fmt) for c in snapshot.cards.values())
    return cache[fmt]


def step_texts(request: RouteRequest, index: IndexManager) -> list[str]:
    """What to embed for this step: the whole query, then each ask (none for an empty
    namespace, which is answered without a model call)."""
    snapshot = index.get(request.namespace)
    if snapshot is None or not len(snapshot.cards):
        return []
    return query_texts(request.query)


def route_step(
    request: RouteRequest,
    index: IndexManager,
    encoder: Encoder,
    config: RouterConfig,
    prior: Mapping[str, float] | None = None,
    cosines: Cosines = gemv_rows,
) -> RouteResult:
    """Rank the namespace's tools for one step; never touches the database."""
    started = time.perf_counter()
    texts = step_texts(request, index)
    vectors = np.asarray(encoder.encode(texts), dtype=np.float32) if texts else None
    embed = time.perf_counter() - started
    return rank_step(request, index, vectors, encoder.name, config, prior, cosines, embed, texts)


def rank_step(
    request: RouteRequest,
    index: IndexManager,
    query_vec: np.ndarray | None,
    model: str,
    config: RouterConfig,
    prior: Mapping[str, float] | None = None,
    cosines: Cosines = gemv_rows,
    embed_seconds: float = 0.0,
    texts: Sequence[str] | None = None,
) -> RouteResult:
    """Rank with the step's vectors already made (rows of ``step_texts``, given as ``texts``
    if the caller has them; ``None`` when it has none) and shape the answer."""
    snapshot = index.get(request.namespace)
    candidates: list[Candidate] = []
    timings: dict[str, float] = {}
    # A snapshot swapped in since step_texts (a first card registered meanwhile) is ranked
    # without an embedding rather than not at all.
    if snapshot is not None and len(snapshot.cards):
        started = time.perf_counter()
        candidates = route(
            snapshot.index,
            request.query,
            query_vec,
            k=request.k,
            context=request.context,
            tags=request.tags,
            min_score=request.min_score,
            prior=prior,
            config=config,
            stages=ALL_STAGES,
            cosines=cosines,
            texts=texts or None,
        )
        timings = {"embed": embed_seconds, "rank": time.perf_counter() - started}
    summaries = snapshot.summaries if snapshot else {}
    response = RouteResponse(
        route_id=new_route_id(),
        namespace=request.namespace,
        model=model,
        candidates=[
            RouteCandidate(
                name=c.name,
                summary=summaries[c.name],
                score=round(c.score, SCORE_DECIMALS),
                # + 0.0: a part rounded to -0.0 shows as 0.0
                stages={k: round(v, SCORE_DECIMALS) + 0.0 for k, v in c.stages.items()},
                missing_required=list(c.missing_required),
                invalid_context=[
                    InvalidContext(parameter=p, reason=r) for p, r in c.invalid_context
                ],
            )
            for c in candidates
        ],
        step_read=StepRead.of(request.query),
    )
    if request.format != "raw" and snapshot is not None:
        # Each returned card decoded once (the snapshot keeps them as JSON: tools/live_index.py).
        tools = [from_card(snapshot.cards[c.name], request.format) for c in candidates]
        returned = estimate_tokens(tools)
        total = _namespace_tokens(snapshot, request.format)
        response.tools = tools
        renamed = {
            exported: c.name
            for c in candidates
            if (exported := exported_name(c.name, request.format)) != c.name
        }
        response.tool_names = renamed or None
        response.tokens = TokenEstimate(
            returned=returned, namespace_total=total, saved=total - returned, method=TOKEN_METHOD
        )
    elif request.format != "raw":
        response.tools = []
        response.tokens = TokenEstimate(returned=0, namespace_total=0, saved=0, method=TOKEN_METHOD)
    return RouteResult(response, candidates, timings)
