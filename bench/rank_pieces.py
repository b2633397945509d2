"""Where a route's ranking time goes: each router function timed inside real routes.

    .venv/bin/python bench/rank_pieces.py --tools 10000 --rounds 400

Synthetic cards as in route_bench.py. Each round embeds one query with the service's encoder,
then ranks it (``rank_step``, with the service's cosine product; not recorded) right away, as
a route does: whatever the model call evicted from the caches is evicted here too. The
functions below are wrapped with timers (a wrapper costs ~1 µs, so the parts are a little
high); a function called inside another is counted in both. Prints the medians per route, in
ms, as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import app.embedding.cosines as cosines_module
import app.route.service as routes_service
import app.routing.pipeline as pipeline
import app.routing.signals as signals
from app.schemas import RouteRequest
from app.services import build_encoder
from app.settings import Settings
from bench.load_client import QUERIES
from bench.route_bench import WARM_UP, synthetic_services

# (module or class, function name, label)
TIMED: list[tuple[Any, str, str]] = [
    (routes_service, "route", "route (the three stages)"),
    (pipeline, "analyse_query", "query analysis (segments, tokens, BM25)"),
    (signals, "bm25_row", "  BM25 row"),
    (pipeline, "candidate_scores", "scores of the candidates (stages 1-2)"),
    (pipeline, "cosine_rows", "  cosine rows"),
    (signals, "unit_rows", "    unit query rows"),
    (cosines_module.Int8Matrix, "product", "    int8 product and moments"),
    (pipeline, "zscore_stats", "  z-score statistics"),
    (pipeline, "prior_part", "  usage prior"),
    (pipeline, "relative_to_best", "  relative to the best"),
    (pipeline, "exact_where_it_counts", "exact rescoring, every tool scored"),
    (pipeline, "fuse", "fusion, every tool scored"),
    (pipeline, "top_indices", "pool and top k"),
    (pipeline, "query_evidence", "rule check: the query's evidence"),
    (pipeline, "matched_in", "rule check: terms matched"),
    (pipeline, "rule_check", "rule check: penalties"),
    (pipeline, "mmr_order", "MMR order"),
    (pipeline, "candidates", "candidates"),
]


def timed(spent: dict[str, float], label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - started

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    spent: dict[str, float] = defaultdict(float)
    for owner, name, label in TIMED:
        setattr(owner, name, timed(spent, label, getattr(owner, name)))
    encoder = build_encoder(Settings(_env_file=None))  # type: ignore[call-arg]
    parts: dict[str, list[float]] = defaultdict(list)
    embeds, ranks = [], []
    with synthetic_services(args.tools, encoder) as services:
        print(f"{args.rounds} routes ...", file=sys.stderr, flush=True)
        for i in range(-WARM_UP, args.rounds):
            request = RouteRequest(query=QUERIES[i % len(QUERIES)], k=3)
            started = time.perf_counter()
            texts = routes_service.step_texts(request, services.index)
            vectors = np.asarray(services.encoder.encode(texts), dtype=np.float32)
            embedded = time.perf_counter()
            step = routes_service.EmbeddedStep(texts, vectors, embedded - started)
            spent.clear()
            routes_service.rank_step(request, services, step)
            if i >= 0:
                embeds.append(embedded - started)
                ranks.append(time.perf_counter() - embedded)
                for _, _, label in TIMED:
                    parts[label].append(spent.get(label, 0.0))

    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 3)

    embed, rank = ms(embeds), ms(ranks)
    report = {
        "tools": args.tools,
        "rounds": args.rounds,
        "embedding_ms": embed,
        "rank_step_ms": rank,
        "route_over_embedding": round((embed + rank) / embed, 3),
        "parts_ms": {label: ms(parts[label]) for _, _, label in TIMED},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
