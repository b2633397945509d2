"""What the learned layer costs (docs/BENCHMARKS.md, "Learning from reports"):

* a route at ``--tools`` tools with the namespace's reranker serving and without,
  interleaved in one run (median of each, and their ratio; with ``--rounds`` the same
  routes again, each round's ratio and their median: the machine's load moves a round),
  its bank holding reports of every tool (the worst case: each candidate has report
  features to read);
* training a reranker from ``--reports`` reports (each a list: 10,000 and 100,000) against
  those tools, on this machine's cores: seconds (wall and process CPU), then, in a second
  training under tracemalloc (which slows Python code 2-3x: ``seconds_traced``), peak memory;
* ``--guard``: instead, a whole guard round (app/learning/guard.py: its challengers, their
  exam, and the refit when promoted) on ``--reports`` remembered steps from 20 keys in
  turn; ``--promote`` times it as if promoted (the synthetic steps' cold ranking is right,
  so the guard refuses them, and no refit is trained).

Pure pipeline on synthetic cards and vectors (the model's time is not the stage's):

    python -m bench.perf.learned_cost --tools 10000 --reports 10000 100000

The synthetic reports are told apart by a split or two, so the model trained on them has
trees of one split; ``--forest FILE`` routes with the trees of a reranker trained on real
reports instead (its bytes: ``bench.quality.learn_tune --save DIR``), as deep as a
served model's:

    python -m bench.quality.learn_tune --data /work/shared/data/metatool --seeds 0 \
        --designs default --save /tmp/models
    python -m bench.perf.learned_cost --tools 10000 --reports --rounds 3 \
        --forest /tmp/models/default-seed0.npz

A whole guard round, as if promoted:

    python -m bench.perf.learned_cost --tools 10000 --reports 10000 --guard --promote

``--objective lambdarank`` trains LightGBM's lambdarank trees instead of the served binary
ones (``training.DEFAULT_TREES``), to compare their cost.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
import tracemalloc
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from app.learning import guard
from app.learning.training import DEFAULT_TREES, OBJECTIVES, Trees, train_reranker
from app.loop.memory import RememberedStep
from app.routing import NamespaceView, RouteOptions, Router, RouterConfig, RouterIndex, ToolDoc
from app.routing.reranker import Bank, Forest, Learned
from bench.common import parser

WORDS = [f"w{i}" for i in range(3000)]


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def catalog(tools: int, dim: int, rng: np.random.Generator) -> tuple[RouterIndex, np.ndarray]:
    docs = [
        ToolDoc(
            name=f"tool_{i}",
            summary=" ".join(rng.choice(WORDS, 6)),
            description=" ".join(rng.choice(WORDS, 30)),
        )
        for i in range(tools)
    ]
    vectors = unit(rng.normal(size=(tools, dim)))
    return RouterIndex.build(docs, vectors, RouterConfig()), vectors


def steps_of(
    vectors: np.ndarray, count: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    tools = rng.integers(0, len(vectors), count)
    noise = rng.normal(size=(count, vectors.shape[1])).astype(np.float32)
    return unit(vectors[tools] + 0.08 * noise), tools


def reports(index: RouterIndex, vectors: np.ndarray, count: int, rng: np.random.Generator) -> Bank:
    """``count`` reports: each a noisy copy of its tool's vector, with words of its card."""
    steps, tools = steps_of(vectors, count, rng)
    texts = [" ".join(rng.choice(WORDS, 8)) for _ in range(count)]
    names = [index.names[t] for t in tools.tolist()]
    return Bank.build(steps, names, [1.0] * count, texts)


def guard_round(
    index: RouterIndex,
    vectors: np.ndarray,
    count: int,
    promote: bool,
    rng: np.random.Generator,
    trees: Trees = DEFAULT_TREES,
) -> dict[str, object]:
    """One guard round on ``count`` remembered steps (one a second, 20 keys in turn)."""
    steps, tools = steps_of(vectors, count, rng)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    remembered = [
        RememberedStep(
            index.names[t],
            " ".join(rng.choice(WORDS, 8)) + f" s{i}",
            1.0,
            1,
            f"r{i}",
            start + timedelta(seconds=i),
            frozenset({f"agent-{i % 20}"}),
        )
        for i, t in enumerate(tools.tolist())
    ]
    decide = guard.decide
    if promote:
        guard.decide = lambda *_: (True, "promoted by the bench")
    try:
        began, cpu = time.perf_counter(), time.process_time()
        _, verdict = guard.challenge(index, remembered, steps, 3, RouterConfig(), None, trees)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    finally:
        guard.decide = decide
    return {
        "reports": count,
        "guard_seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "held_out": verdict.held_out,
        "promoted": verdict.promoted,
    }


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--tools", type=int, default=10_000)
    cli.add_argument("--dim", type=int, default=896, help="the default encoder's")
    cli.add_argument("--reports", type=int, nargs="*", default=[10_000, 100_000])
    cli.add_argument("--routes", type=int, default=300)
    cli.add_argument("--rounds", type=int, default=1, help="of the interleaved routes")
    cli.add_argument("--forest", type=Path, help="a stored reranker whose trees to route with")
    cli.add_argument("--guard", action="store_true", help="time a guard round instead")
    cli.add_argument("--promote", action="store_true", help="… as if promoted (with the refit)")
    cli.add_argument(
        "--objective", choices=OBJECTIVES, default=DEFAULT_TREES.objective, help="the trees'"
    )
    args = cli.parse_args(argv)
    trees = (
        DEFAULT_TREES
        if args.objective == DEFAULT_TREES.objective
        else Trees(objective=args.objective)
    )
    threadpool_limits(limits=1, user_api="blas")  # as the service runs (app/services.py)
    rng = np.random.default_rng(0)
    index, vectors = catalog(args.tools, args.dim, rng)
    if args.guard:
        for count in args.reports:
            print(
                json.dumps(guard_round(index, vectors, count, args.promote, rng, trees)), flush=True
            )
        return
    out: dict[str, object] = {"tools": args.tools, "dim": args.dim, "objective": args.objective}
    config = RouterConfig()
    bank = reports(index, vectors, 2000, rng)
    ranker = train_reranker(index, config, bank, bank.vectors, trees)
    if args.forest is not None:
        with np.load(args.forest) as stored:
            ranker = dataclasses.replace(ranker, forest=Forest.of_arrays(dict(stored)))
    learned = Learned(ranker)
    router, options = Router(RouterConfig()), RouteOptions(k=5)
    views = {False: NamespaceView(index), True: NamespaceView(index, learned=learned)}
    queries = [" ".join(rng.choice(WORDS, 8)) for _ in range(args.routes)]
    qvecs, _ = steps_of(vectors, args.routes, rng)
    plain_ms: list[float] = []
    learned_ms: list[float] = []
    ratios = []
    for _ in range(args.rounds):
        at = len(plain_ms)
        for text, vec in zip(queries, qvecs, strict=True):
            for with_it, times in ((False, plain_ms), (True, learned_ms)):
                began = time.perf_counter()
                router.route(views[with_it], text, vec, options)
                times.append((time.perf_counter() - began) * 1000)
        ratios.append(statistics.median(learned_ms[at:]) / statistics.median(plain_ms[at:]))
    plain, with_learned = statistics.median(plain_ms), statistics.median(learned_ms)
    out["route_ms_median"] = {"without": round(plain, 3), "with_model": round(with_learned, 3)}
    out["route_ratio"] = round(with_learned / plain, 3)
    if args.rounds > 1:
        out["round_ratios"] = [round(r, 3) for r in ratios]
        out["median_round_ratio"] = round(statistics.median(ratios), 3)
    print(json.dumps(out), flush=True)
    training = []
    for count in args.reports:
        bank = reports(index, vectors, count, rng)
        began, cpu = time.perf_counter(), time.process_time()
        train_reranker(index, config, bank, bank.vectors, trees)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        tracemalloc.start()  # a second training: tracing slows Python code 2-3x
        began = time.perf_counter()
        train_reranker(index, config, bank, bank.vectors, trees)
        traced = time.perf_counter() - began
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        training.append(
            {
                "reports": count,
                "seconds": round(seconds, 1),
                "cpu_seconds": round(cpu, 1),
                "peak_mib": round(peak / 2**20, 1),
                "seconds_traced": round(traced, 1),
            }
        )
        print(json.dumps(training[-1]), flush=True)
    out["training"] = training
    print(json.dumps(out))


if __name__ == "__main__":
    main()
