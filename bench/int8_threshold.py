"""Where the int8 first pass starts to pay: ``rank_step`` with exact float32 cosines against
the service's int8 first pass (``TOOLREACH_COSINE_INT8_DIMS`` directions, exact rescoring),
interleaved on the same steps, at several catalog sizes.

Each size is a throw-away namespace of synthetic cards (as route_bench.py writes them), or,
with ``--db``, the real catalog a run of bench/route_cost.py filled. Every step's texts are
embedded once first (a route's embedding is the same in both variants), then each round ranks
one step once per variant in alternating order, in one thread (BLAS too, as the service runs),
and the thread CPU of ``rank_step`` is kept. Also counts the steps whose first tool, and
whose first three tools, differ between the two (synthetic cards are random vectors, whose
flat spectrum a 128-direction copy fits poorly: count those on real cards, ``--db``):

    PYTHONPATH=. .venv/bin/python bench/int8_threshold.py --tools 500 1000 2000 5000
    PYTHONPATH=. .venv/bin/python bench/int8_threshold.py --db /tmp/route-cost/cost-....db
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.embedding.cosines import CosineBatcher
from app.route.service import EmbeddedStep, rank_step, step_texts
from app.schemas import RouteRequest
from app.services import Services, build_encoder, build_services
from app.settings import Settings
from bench.route_bench import synthetic_services
from bench.route_cost import shared_data, steps


@contextlib.contextmanager
def stored(db: Path) -> Iterator[Services]:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{db}")  # type: ignore[call-arg]
    services = build_services(settings)
    try:
        yield services
    finally:
        services.close()


def measure(services: Services, queries: list[str], rounds: int) -> dict[str, Any]:
    """Both variants over ``rounds`` passes of the steps; medians and means in ms."""
    services.index.sync()
    if services.examples is not None:
        services.examples.refresh()
    namespace = next(iter(services.index.namespaces()))
    snapshot = services.index.get(namespace)
    assert snapshot is not None
    tools = len(snapshot.index.embeddings)
    dims = services.settings.cosine_int8_dims
    variants = {
        "float32": CosineBatcher(int8_min_tools=None),
        "int8": CosineBatcher(int8_min_tools=1, int8_dims=dims),
    }
    for batcher in variants.values():
        batcher.prepare(snapshot.index.embeddings)
    requests = [RouteRequest(query=q, namespace=namespace, k=3) for q in queries]  # type: ignore[call-arg]
    embedded = []
    for request in requests:
        texts = step_texts(request, services.index)
        embedded.append((texts, np.asarray(services.encoder.encode(texts), dtype=np.float32)))
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    firsts: dict[str, list[tuple[str, ...]]] = {name: [] for name in variants}
    names = list(variants)
    for turn in range(rounds):
        for i, request in enumerate(requests):
            texts, vectors = embedded[i]
            order = names if (turn + i) % 2 == 0 else names[::-1]
            for name in order:
                step = EmbeddedStep(texts, vectors, 0.0, variants[name])
                started = time.thread_time()
                result = rank_step(request, services, step)
                cpu[name].append(time.thread_time() - started)
                if turn == 0:
                    answer = result.candidates[:3]
                    firsts[name].append(tuple(c.name for c in answer))
    pairs = list(zip(firsts["float32"], firsts["int8"], strict=True))
    differ = sum(a != b for a, b in pairs)
    first_differ = sum(a[:1] != b[:1] for a, b in pairs)
    out: dict[str, Any] = {"tools": tools, "steps": len(requests), "rounds": rounds}
    for name in names:
        out[name] = {
            "p50_ms": round(statistics.median(cpu[name]) * 1000, 3),
            "mean_ms": round(statistics.fmean(cpu[name]) * 1000, 3),
        }
    out["int8_over_float32_p50"] = round(out["int8"]["p50_ms"] / out["float32"]["p50_ms"], 3)
    out["top1_differ"] = first_differ
    out["top3_differ"] = differ
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=int, nargs="*", default=[500, 1000, 2000, 5000])
    parser.add_argument("--db", type=Path, help="a database bench/route_cost.py filled")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    queries = steps(shared_data())[: args.steps]
    reports = []
    with threadpool_limits(1):
        if args.db is not None:
            with stored(args.db) as services:
                reports.append({"catalog": "real", **measure(services, queries, args.rounds)})
        else:
            encoder = build_encoder(Settings(_env_file=None))  # type: ignore[call-arg]
            for size in args.tools:
                with synthetic_services(size, encoder) as services:
                    report = measure(services, queries, args.rounds)
                reports.append({"catalog": "synthetic", **report})
                print(json.dumps(reports[-1]), file=sys.stderr, flush=True)
    text = json.dumps(reports, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
