"""Where a route's ranking time goes: each router function timed inside real routes.

    .venv/bin/python -m bench.perf.rank_pieces --tools 10000 --rounds 400

Synthetic cards (bench.registries). Each round embeds one query with the service's encoder,
then ranks it (``rank_step``, with the service's cosine product; not recorded) right away, as
a route does: whatever the model call evicted from the caches is evicted here too. The
functions below are wrapped with timers (a wrapper costs ~1 µs, so the parts are a little
high); a function called inside another is counted in both. Prints the medians per route, in
ms, as JSON.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

import app.embedding.cosines as cosines_module
import app.route.service as routes_service
import app.routing.pipeline as pipeline
import app.routing.rule_check as rule_check
import app.routing.scores as scores
import app.routing.signals as signals
from app.routing import Router
from app.schemas import RouteRequest
from app.services import build_encoder
from app.settings import Settings
from bench.common import QUERIES, WARM_UP, add_up, parser
from bench.registries import synthetic_services

# (module or class, the name it calls the function by, label): wrapped where it is called
TIMED: list[tuple[Any, str, str]] = [
    (Router, "route", "Router.route (the three stages)"),
    (pipeline, "analyse_query", "query analysis (parts, tokens, BM25)"),
    (signals, "bm25_row", "  BM25 row"),
    (scores, "candidate_scores", "scores of the candidates (stages 1-2)"),
    (scores, "cosine_rows", "  cosine rows"),
    (signals, "unit_rows", "    unit query rows"),
    (cosines_module.Int8Matrix, "product", "    int8 product and moments"),
    (scores, "zscore_stats", "  z-score statistics"),
    (scores, "relative_to_best", "  relative to the best"),
    (scores, "exact_where_it_counts", "exact rescoring, every tool scored"),
    (scores, "fuse_parts", "fusion, every tool scored"),
    (pipeline, "with_votes", "votes (values, action, examples)"),
    (pipeline, "top_indices", "pool and top k"),
    (rule_check, "step_offer", "rule check: the step's offer"),
    (rule_check, "matched_in", "rule check: terms matched"),
    (pipeline, "rule_check", "rule check: penalties"),
    (pipeline, "mmr_order", "MMR order"),
    (pipeline, "candidates", "candidates"),
]


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--tools", type=int, default=10_000)
    cli.add_argument("--rounds", type=int, default=400)
    args = cli.parse_args(argv)
    spent: dict[str, float] = defaultdict(float)
    for owner, name, label in TIMED:
        setattr(owner, name, add_up(spent, label, getattr(owner, name), time.perf_counter))
    encoder = build_encoder(Settings(_env_file=None))
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
            routes_service.rank_step(request, services.routing, step)
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
