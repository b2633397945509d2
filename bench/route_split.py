"""A route's CPU part by part, in one thread, every step's texts already in the embedding cache:
the request model, the cached embedding, the ranking (``rank_step``: ``route`` and the answer's
shaping), the answer's JSON, the event record. Thread CPU time, 200 steps twice.

    PYTHONPATH=. .venv/bin/python bench/route_split.py DB   # a database bench/route_cost.py filled
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.route import service as rs
from app.schemas import RouteRequest
from app.services import build_services
from app.settings import Settings
from bench.route_cost import shared_data, steps


def main() -> None:
    url = f"sqlite:///{sys.argv[1]}"
    services = build_services(Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
    services.index.sync()
    if services.examples is not None:
        services.examples.refresh()
    queries = steps(shared_data())[:200]
    encode = services.encoder.encode
    for query in queries:  # every text in the cache first
        encode(rs.step_texts(RouteRequest(query=query), services.index), interactive=True)  # type: ignore[call-arg]
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
            vectors = np.asarray(encode(texts, interactive=True))  # type: ignore[call-arg]
            timed("embedding (cached)", t)
            t = time.thread_time()
            result = rs.rank_step(request, services, rs.EmbeddedStep(texts, vectors, 0.0))
            timed("rank_step", t)
            t = time.thread_time()
            result.response.model_dump_json(exclude_none=True)
            timed("answer JSON", t)
            t = time.thread_time()
            rs._record(request, result, time.perf_counter(), services)
            timed("event record", t)
    for name, values in parts.items():
        mean, p50 = statistics.mean(values) * 1000, statistics.median(values) * 1000
        print(f"{name:20} mean {mean:.3f} ms  p50 {p50:.3f} ms")
    services.close()


if __name__ == "__main__":
    main()
