"""A route's CPU part by part, in one thread, every step's texts already in the embedding cache:
the request model, the cached embedding, the ranking (``rank_step``: ``Router.route`` and the
answer's shaping), the answer's JSON, the event record. Thread CPU time, 200 steps twice.

    PYTHONPATH=. .venv/bin/python -m bench.perf.route_split DB   # a database route_cost filled
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.route import service as rs
from app.schemas import RouteRequest
from bench.common import parser, public_steps, shared_data
from bench.registries import stored_services

if TYPE_CHECKING:
    from app.services import Services


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("db", type=Path, help="a database bench.perf.route_cost filled")
    args = cli.parse_args(argv)
    with stored_services(args.db) as services:
        parts = split(services, public_steps(shared_data())[:200])
    for name, values in parts.items():
        mean, p50 = statistics.mean(values) * 1000, statistics.median(values) * 1000
        print(f"{name:20} mean {mean:.3f} ms  p50 {p50:.3f} ms")


def split(services: Services, queries: list[str]) -> dict[str, list[float]]:
    """Each part's thread CPU per route, every query routed twice."""
    encode = services.encoder.encode
    for query in queries:  # every text in the cache first
        encode(rs.step_texts(RouteRequest(query=query), services.index), interactive=True)
    parts: dict[str, list[float]] = {}

    def timed(name: str, started: float) -> None:
        parts.setdefault(name, []).append(time.thread_time() - started)

    for _ in range(2):
        for query in queries:
            t = time.thread_time()
            request = RouteRequest.model_validate({"query": query})
            timed("request model", t)
            t = time.thread_time()
            texts = rs.step_texts(request, services.index)
            vectors = np.asarray(encode(texts, interactive=True))
            timed("embedding (cached)", t)
            t = time.thread_time()
            result = rs.rank_step(request, services.routing, rs.EmbeddedStep(texts, vectors, 0.0))
            timed("rank_step", t)
            t = time.thread_time()
            result.response.model_dump_json(exclude_none=True)
            timed("answer JSON", t)
            t = time.thread_time()
            rs._record(request, result, time.perf_counter(), services.routing)
            timed("event record", t)
    return parts


if __name__ == "__main__":
    main()
