"""Where the ranking's CPU goes, pass by pass: each pass of ``app/routing/pipeline.py`` wrapped
to add up its thread CPU (no profiler, whose overhead inflates Python loops), over 200 steps
whose texts are already embedded, ranked twice each in one thread (``rank_step``).

    PYTHONPATH=. .venv/bin/python bench/rank_passes.py DB   # a database bench/route_cost.py filled

A pass called inside another counts in both (the cosine product and the fusion are inside
``stage_scores``: shown indented).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.route import service as rs
from app.routing import pipeline
from app.schemas import RouteRequest
from app.services import build_services
from app.settings import Settings
from bench.route_cost import shared_data, steps

PASSES = [
    (pipeline, "analyse_query", "BM25 rows and the step's parts (analyse_query)"),
    (pipeline, "stage_scores", "cosines, fusion, prior (stage_scores)"),
    (pipeline, "cosine_rows", "  of which the cosine product (cosine_rows)"),
    (pipeline, "fuse_parts", "  of which the fusion (fuse_parts)"),
    (pipeline, "with_memory", "query memory (with_memory)"),
    (pipeline, "with_examples", "card examples (with_examples)"),
    (pipeline, "rule_check", "parameter rules of the pool (rule_check)"),
    (pipeline, "covering_answer", "covering answer (several parts)"),
    (pipeline, "mmr_order", "MMR"),
    (pipeline, "candidates", "candidates and confidence"),
    (rs, "route", "route(), whole"),
    (rs, "route_response", "answer shaping (route_response)"),
]


def timed(spent: dict[str, float], label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - started

    return wrapper


def main() -> None:
    url = f"sqlite:///{sys.argv[1]}"
    services = build_services(Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
    services.index.sync()
    if services.examples is not None:
        services.examples.refresh()
    queries = steps(shared_data())[:200]
    embedded = {}
    for query in queries:
        texts = rs.step_texts(RouteRequest(query=query), services.index)  # type: ignore[call-arg]
        vectors = np.asarray(services.encoder.encode(texts, interactive=True), np.float32)  # type: ignore[call-arg]
        embedded[query] = rs.EmbeddedStep(texts, vectors, 0.0)

    def rank_all() -> float:
        started = time.thread_time()
        for query in queries:
            rs.rank_step(RouteRequest(query=query), services, embedded[query])  # type: ignore[call-arg]
        return time.thread_time() - started

    rank_all()  # warm-up
    spent: dict[str, float] = defaultdict(float)
    for module, name, label in PASSES:
        setattr(module, name, timed(spent, label, getattr(module, name)))
    total = rank_all() + rank_all()
    routes = 2 * len(queries)
    print(f"{'rank_step, whole':48} {total / routes * 1000:.3f} ms a route ({routes} routes)")
    for _, _, label in PASSES:
        print(f"{label:48} {spent[label] / routes * 1000:.3f} ms")
    services.close()


if __name__ == "__main__":
    main()
