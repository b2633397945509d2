"""Where the ranking's CPU goes, pass by pass: each pass of ``Router.route`` (app/routing/:
``pipeline.py`` and the modules it calls) wrapped to add up its thread CPU (no profiler, whose
overhead inflates Python loops), over 200 steps whose texts are already embedded, ranked twice
each in one thread (``rank_step``).

    PYTHONPATH=. .venv/bin/python -m bench.perf.rank_passes DB   # a database route_cost filled

A pass called inside another counts in both (the cosine product and the fusion are inside
``stage_scores``: shown indented). Each vote of ``votes.VOTES`` is one pass.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.route import service as rs
from app.routing import Router, pipeline, scores, votes
from app.schemas import RouteRequest
from bench.common import add_up, parser, public_steps, shared_data
from bench.registries import embedded, stored_services

# (module or class, the name it calls the pass by, label); each is wrapped where it is called
PASSES: list[tuple[Any, str, str]] = [
    (pipeline, "analyse_query", "BM25 rows and the step's parts (analyse_query)"),
    (pipeline, "stage_scores", "cosines, fusion, prior (stage_scores)"),
    (scores, "cosine_rows", "  of which the cosine product (cosine_rows)"),
    (scores, "fuse_parts", "  of which the fusion (fuse_parts)"),
    (pipeline, "rule_check", "parameter rules of the pool (rule_check)"),
    (pipeline, "covering_answer", "covering answer (several parts)"),
    (pipeline, "mmr_order", "MMR"),
    (pipeline, "candidates", "candidates and confidence"),
    (Router, "route", "Router.route, whole"),
    (rs, "route_response", "answer shaping (route_response)"),
]
# each vote (votes.VOTES, read by name when a route votes), after stage_scores
VOTE_LABELS = {
    "memory": "query memory (memory vote)",
    "examples": "card examples (examples vote)",
    "learned": "learned model (learned vote)",
}


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("db", type=Path, help="a database bench.perf.route_cost filled")
    args = cli.parse_args(argv)
    with stored_services(args.db) as services:
        queries = public_steps(shared_data())[:200]
        steps = {q: embedded(services, q, interactive=True) for q in queries}

        def rank_all() -> float:
            started = time.thread_time()
            for query in queries:
                request = RouteRequest.model_validate({"query": query})
                rs.rank_step(request, services.routing, steps[query])
            return time.thread_time() - started

        rank_all()  # warm-up
        spent: dict[str, float] = defaultdict(float)
        for owner, name, label in PASSES:
            setattr(owner, name, add_up(spent, label, getattr(owner, name), time.thread_time))
        votes.VOTES = tuple(
            (name, add_up(spent, VOTE_LABELS[name], vote, time.thread_time))
            for name, vote in votes.VOTES
        )
        total = rank_all() + rank_all()
    routes = 2 * len(queries)
    print(f"{'rank_step, whole':48} {total / routes * 1000:.3f} ms a route ({routes} routes)")
    labels = [label for _, _, label in PASSES]
    for label in [*labels[:4], *VOTE_LABELS.values(), *labels[4:]]:
        print(f"{label:48} {spent[label] / routes * 1000:.3f} ms")


if __name__ == "__main__":
    main()
