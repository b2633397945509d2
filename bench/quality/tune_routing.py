"""Offline evaluation and tuning of the ranking core (no database, no service).

Reads a dataset directory holding ``tools.jsonl`` ({name, description, parameters|null}) and a
queries file ({query, relevant, id}), embeds tools and queries with a real encoder (vectors are
cached as .npy under ``--cache``), routes every query through ``Router.route`` and prints
hit@1, recall@3, recall@5 and nDCG@10 (binary gains) for the full pipeline and its ablations.

    # report: the full pipeline and every ablation on the evaluation queries
    python -m bench.quality.tune_routing --data /work/shared/data/metatool
    python -m bench.quality.tune_routing --data /work/shared/data/seal-tools
    # tune: MetaTool's queries_all minus the evaluation sample, Seal-Tools' dev-* ids
    python -m bench.quality.tune_routing --data .../metatool --queries queries_all.jsonl \\
        --exclude queries.jsonl --grid
    python -m bench.quality.tune_routing --data .../seal-tools --only-prefix dev- --grid
    # speed and memory at scale (tools cloned from the dataset, renamed)
    python -m bench.quality.tune_routing --data .../seal-tools --speed 10000
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import resource
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.embedding.encoders import Encoder, make_encoder
from app.routing import (
    ALL_STAGES,
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
    query_texts,
)
from bench.common import (
    add_cache,
    add_data,
    add_prefixes,
    cached_encode,
    parser,
    read_jsonl,
    step_rows,
)
from registry.calls import value_problem

ABLATIONS: dict[str, frozenset[str]] = {
    "full": ALL_STAGES,
    "keyword-only": frozenset({"keyword"}),
    "embedding-only": frozenset({"embedding"}),
    "without-prior": ALL_STAGES - {"prior"},
    "without-penalty": ALL_STAGES - {"penalty"},
}
GRID: dict[str, tuple[Any, ...]] = {
    "keyword_weight": (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4),
    "part_weight": (0.0, 0.5, 1.0, 2.0),
    "fusion": ("zscore", "minmax", "rrf"),
    "mmr_lambda": (1.0, 0.9, 0.8),
    "missing_param_penalty": (0.0, 0.05, 0.1, 0.2),
}
Metrics = dict[str, float]


def load_tools(path: Path) -> list[ToolDoc]:
    """Dataset tools as router cards (``parameters: null`` → ``{}``; no summary)."""
    return [
        ToolDoc(
            name=row["name"],
            summary="",
            description=row.get("description") or "",
            parameters=row.get("parameters") or {},
        )
        for row in read_jsonl(path)
    ]


def select_queries(rows: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Apply --exclude (ids of another file), --only-prefix and --skip-prefix."""
    if args.exclude:
        excluded = {row["id"] for row in read_jsonl(args.data / args.exclude)}
        rows = [row for row in rows if row["id"] not in excluded]
    if args.only_prefix:
        rows = [row for row in rows if str(row["id"]).startswith(args.only_prefix)]
    if args.skip_prefix:
        rows = [row for row in rows if not str(row["id"]).startswith(args.skip_prefix)]
    return rows


def query_vectors(encoder: Encoder, queries: Sequence[str], cache: Path) -> list[np.ndarray]:
    """Per query, the rows for ``query_texts(query)`` (whole query, then its parts), cached."""
    return step_rows(lambda texts: cached_encode(encoder, texts, cache), queries)


def metrics(ranked: Sequence[str], relevant: Iterable[str]) -> Metrics:
    """hit@1, recall@3, recall@5 and binary nDCG@10 of one ranking."""
    rel = set(relevant)
    gains = [1.0 / np.log2(i + 2) for i, name in enumerate(ranked[:10]) if name in rel]
    ideal = sum(1.0 / np.log2(i + 2) for i in range(min(len(rel), 10)))
    return {
        "hit@1": float(bool(ranked) and ranked[0] in rel),
        "recall@3": len(rel & set(ranked[:3])) / len(rel),
        "recall@5": len(rel & set(ranked[:5])) / len(rel),
        "nDCG@10": sum(gains) / ideal,
    }


def evaluate(
    index: RouterIndex,
    queries: Sequence[dict[str, Any]],
    vectors: Sequence[np.ndarray],
    config: RouterConfig,
    stages: frozenset[str],
) -> Metrics:
    """Mean metrics of a route with ``k = 10`` over the queries."""
    rows = []
    router, view, options = Router(config, stages), NamespaceView(index), RouteOptions(k=10)
    for row, vec in zip(queries, vectors, strict=True):
        ranked = router.route(view, row["query"], vec, options)
        rows.append(metrics([c.name for c in ranked], row["relevant"]))
    return {key: statistics.fmean(r[key] for r in rows) for key in rows[0]}


def fmt(values: Metrics) -> str:
    """Metrics as one aligned line."""
    return "  ".join(f"{k} {v:.4f}" for k, v in values.items())


def apply_overrides(config: RouterConfig, pairs: Sequence[str]) -> RouterConfig:
    """``--set key=value`` overrides, the value parsed as JSON when it can be."""
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        try:
            changes[key] = json.loads(raw)
        except json.JSONDecodeError:
            changes[key] = raw
    return dataclasses.replace(config, **changes)


def report(run: Callable[[RouterConfig, frozenset[str]], Metrics], config: RouterConfig) -> None:
    """The full pipeline and each ablation."""
    for label, stages in ABLATIONS.items():
        print(f"{label:16s} {fmt(run(config, stages))}", flush=True)


def grid(
    run: Callable[[RouterConfig, frozenset[str]], Metrics], config: RouterConfig, keys: list[str]
) -> None:
    """One parameter at a time around ``config`` (coordinate sweep), full pipeline."""
    for key, values in GRID.items():
        if keys and key not in keys:
            continue
        for value in values:
            candidate = dataclasses.replace(config, **{key: value})
            print(f"{key}={value!s:8s} {fmt(run(candidate, ALL_STAGES))}", flush=True)


def cloned_tools(tools: Sequence[ToolDoc], n: int) -> list[ToolDoc]:
    """``n`` cards made by cycling ``tools`` with numbered names (for speed tests only)."""
    return [
        dataclasses.replace(tool, name=f"{tool.name}_{i // len(tools)}")
        for i, tool in zip(range(n), itertools.cycle(tools), strict=False)
    ]


def timed(call: Callable[[str], object], queries: Sequence[str]) -> list[float]:
    """Milliseconds per ``call(query)``, after a warm-up pass over five queries."""
    for query in queries[:5]:
        call(query)
    out = []
    for query in queries:
        start = time.perf_counter()
        call(query)
        out.append((time.perf_counter() - start) * 1e3)
    return out


def speed(args: argparse.Namespace, encoder: Encoder, tools: list[ToolDoc]) -> None:
    """Build time, route latency (p50/p95, excluding the embedding) and peak memory."""
    docs = cloned_tools(tools, args.speed)
    base = cached_encode(encoder, [embedding_text(t) for t in tools], args.cache)
    embeddings = base[np.arange(len(docs)) % len(tools)]
    config = RouterConfig()
    start = time.perf_counter()
    index = RouterIndex.build(docs, embeddings, config, value_check=value_problem)
    print(f"build {len(docs)} tools: {time.perf_counter() - start:.2f} s")
    queries = [row["query"] for row in read_jsonl(args.data / args.queries)][: args.speed_queries]
    vectors = {q: encoder.encode(query_texts(q)) for q in queries}
    embed_ms = timed(lambda q: encoder.encode([q]), queries)
    router, view = Router(config), NamespaceView(index)
    route_ms = timed(lambda q: router.route(view, q, vectors[q]), queries)
    for label, values in (("bare query embedding", embed_ms), ("Router.route", route_ms)):
        p50, p95 = np.percentile(values, [50, 95])
        print(f"{label:22s} p50 {p50:.3f} ms  p95 {p95:.3f} ms")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS (model + index + this script): {peak:.0f} MiB")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--queries", default="queries.jsonl")
    cli.add_argument("--exclude", help="drop queries whose id is in this file of --data")
    add_prefixes(cli)
    cli.add_argument("--encoder", default="minilm")
    add_cache(cli)
    cli.add_argument("--set", action="append", default=[], help="config override k=v")
    cli.add_argument(
        "--grid", nargs="*", metavar="KEY", help="sweep GRID (or these keys of it), no ablations"
    )
    cli.add_argument("--speed", type=int, default=0, help="time Router.route at this many tools")
    cli.add_argument("--speed-queries", type=int, default=300)
    return cli.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    encoder = make_encoder(args.encoder)
    tools = load_tools(args.data / "tools.jsonl")
    if args.speed:
        speed(args, encoder, tools)
        return
    queries = select_queries(read_jsonl(args.data / args.queries), args)
    config = apply_overrides(RouterConfig(), args.set)
    embeddings = cached_encode(encoder, [embedding_text(t) for t in tools], args.cache)
    index = RouterIndex.build(tools, embeddings, config, value_check=value_problem)
    vectors = query_vectors(encoder, [row["query"] for row in queries], args.cache)
    print(f"{args.data.name}: {len(tools)} tools, {len(queries)} queries, encoder {encoder.name}")

    def run(cfg: RouterConfig, stages: frozenset[str]) -> Metrics:
        return evaluate(index, queries, vectors, cfg, stages)

    if args.grid is None:
        report(run, config)
    else:
        grid(run, config, args.grid)


if __name__ == "__main__":
    main()
