"""Where the int8 first pass starts to pay: ``rank_step`` with exact float32 cosines against
the service's int8 first pass (``TOOLREACH_COSINE_INT8_DIMS`` directions, exact rescoring),
interleaved on the same steps, at several catalog sizes.

Each size is a throw-away namespace of synthetic cards (bench.registries), or, with ``--db``,
the real catalog a run of bench.perf.route_cost filled. Every step's texts are
embedded once first (a route's embedding is the same in both variants), then each round ranks
one step once per variant in alternating order, in one thread (BLAS too, as the service runs),
and the thread CPU of ``rank_step`` is kept. Also counts the steps whose first tool, and
whose first three tools, differ between the two (synthetic cards are random vectors, whose
flat spectrum a 128-direction copy fits poorly: count those on real cards, ``--db``):

    PYTHONPATH=. .venv/bin/python -m bench.perf.int8_threshold --tools 500 1000 2000 5000
    PYTHONPATH=. .venv/bin/python -m bench.perf.int8_threshold --db /tmp/route-cost/cost-....db
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from app.embedding.cosines import CosineBatcher
from app.route.service import EmbeddedStep, rank_step, step_texts
from app.schemas import RouteRequest
from app.services import Services, build_encoder
from app.settings import Settings
from bench.common import add_json, parser, public_steps, shared_data, write_report
from bench.registries import stored_services, synthetic_services


def measure(services: Services, queries: list[str], rounds: int) -> dict[str, Any]:
    """Both variants over ``rounds`` passes of the steps; medians and means in ms."""
    services.index.sync()
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
    requests = [RouteRequest(query=q, namespace=namespace, k=3) for q in queries]
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
                result = rank_step(request, services.routing, step)
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


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--tools", type=int, nargs="*", default=[500, 1000, 2000, 5000])
    cli.add_argument("--db", type=Path, help="a database bench.perf.route_cost filled")
    cli.add_argument("--steps", type=int, default=200)
    cli.add_argument("--rounds", type=int, default=2)
    add_json(cli)
    args = cli.parse_args(argv)
    queries = public_steps(shared_data())[: args.steps]
    reports = []
    with threadpool_limits(1):
        if args.db is not None:
            with stored_services(args.db) as services:
                reports.append({"catalog": "real", **measure(services, queries, args.rounds)})
        else:
            encoder = build_encoder(Settings(_env_file=None))
            for size in args.tools:
                with synthetic_services(size, encoder) as services:
                    report = measure(services, queries, args.rounds)
                reports.append({"catalog": "synthetic", **report})
                print(json.dumps(reports[-1]), file=sys.stderr, flush=True)
    write_report(reports, args.json)


if __name__ == "__main__":
    main()
