"""Covering answers, measured: all@k and recall@k of the steps that need several tools, and
hit@1 of those that need one, for each variant of the router, on one labelled dataset.

Routed as ``toolreach eval`` routes (the service's write path, index and encoder; k = 10),
each variant a ``name[:key=value,...]``: ``split=0`` reads every step as one part, any other
key is a ``RouterConfig`` field (``cover=0`` keeps the parts in the fusion but answers one
ranked list). Vectors are cached by text under ``--cache``, so variants and reruns embed
each text once.

    python -m bench.quality.cover_sets --data DIR [--only-prefix P | --skip-prefix P] \\
        [--variant one_part:split=0 --variant full ...]
    python -m bench.quality.cover_sets --data DIR --answers FILE   # score a route_answers run

``--answers`` scores the answers ``bench.quality.route_answers`` wrote (any version of the
service, e.g. main's, which has no ``split``).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.cli.completeness import completeness, format_completeness, step_scores
from app.cli.evaluate import NAMESPACE, Query, load_dataset
from app.cli.no_fit import auroc, expected_calibration_error
from app.routing import NamespaceView, RouteOptions, Router, query_texts
from app.services import build_encoder
from app.settings import Settings
from bench.common import TextCache, add_cache, add_data, add_json, add_prefixes, parser
from bench.registries import registered


def parse_variant(spec: str) -> tuple[str, bool, dict[str, Any]]:
    """``name[:key=value,...]`` → (name, split, RouterConfig overrides)."""
    name, _, rest = spec.partition(":")
    split, overrides = True, {}
    for pair in filter(None, rest.split(",")):
        key, _, raw = pair.partition("=")
        try:
            value: Any = json.loads(raw)
        except ValueError:  # a bare word is a string (the shell ate its quotes)
            value = raw
        if key == "split":
            split = bool(value)
        else:
            overrides[key] = value
    return name, split, overrides


def chosen(queries: list[Query], only: str | None) -> list[Query]:
    return [q for q in queries if only is None or q.id.startswith(only)]


def run_variants(
    args: argparse.Namespace, queries: list[Query], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    settings = Settings()
    encoder = TextCache(build_encoder(settings), args.cache)
    report: dict[str, Any] = {}
    with registered(tools, settings, encoder, examples=True) as (services, snapshot):
        view = NamespaceView(snapshot.index, examples=services.examples.get(NAMESPACE))
        base = services.index.config
        for spec in args.variant or ["one_part:split=0", "full"]:
            name, split, overrides = parse_variant(spec)
            config = dataclasses.replace(base, **overrides) if overrides else base
            router, options = (
                Router(config, cosines=services.cosines),
                RouteOptions(k=10, split=split),
            )
            rows, seen = [], []
            for query in queries:
                texts = query_texts(query.text, split=split)
                vectors = encoder.encode(texts)
                ranked = router.route(view, query.text, vectors, options, texts=texts)
                rows.append(step_scores([c.name for c in ranked], query.relevant))
                if len(texts) > 1 and len(query.relevant) > 1:
                    seen.append([(c.confidence, c.name in query.relevant) for c in ranked[:5]])
            report[name] = completeness(rows)
            print("\n".join(format_completeness({name: report[name]})[1:]), flush=True)
            if seen:
                report[name]["confidence"] = calibration(seen)
                print(f"  {json.dumps(report[name]['confidence'])}", flush=True)
    encoder.save()
    return report


def calibration(answers: list[list[tuple[float, bool]]]) -> dict[str, Any]:
    """Of the top 5 of steps read as several parts that need several tools: ECE and AUROC of
    every candidate's confidence (is it one of the step's tools?), the share of answers
    whose confidence rises somewhere down the list, and the mean confidence."""
    flat = [c for answer in answers for c in answer]
    confidence = [c for c, _ in flat]
    hit = [h for _, h in flat]
    rises = sum(any(b[0] > a[0] for a, b in itertools.pairwise(x)) for x in answers)
    return {
        "candidates": len(flat),
        "ece": round(expected_calibration_error(confidence, hit), 4),
        "auroc": round(auroc([c for c, h in flat if h], [c for c, h in flat if not h]), 4),
        "mean": round(sum(confidence) / len(flat), 4),
        "needed": round(sum(hit) / len(flat), 4),
        "rising_answers": round(rises / len(answers), 4),
    }


def score_answers(path: Path, queries: list[Query], all_queries: list[Query]) -> dict[str, Any]:
    """Completeness of a ``route_answers.py`` run (its lines follow the dataset's order)."""
    answers = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    by_text = {q.text: q for q in queries}
    rows = []
    for item in answers:
        query = by_text.get(item["query"])
        if query is not None:
            rows.append(
                step_scores([c["name"] for c in item.get("candidates", [])], query.relevant)
            )
    return {path.name: completeness(rows)}


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    add_prefixes(cli)
    cli.add_argument("--variant", action="append", help="name[:key=value,...] (repeatable)")
    cli.add_argument("--answers", type=Path, help="score this route_answers output")
    add_cache(cli, "/tmp/toolreach_cover")
    add_json(cli)
    args = cli.parse_args(argv)
    tools, every = load_dataset(args.data)
    queries = chosen(load_dataset(args.data, skip_prefix=args.skip_prefix)[1], args.only_prefix)
    print(f"{args.data.name}: {len(tools)} tools, {len(queries)} steps", flush=True)
    if args.answers:
        report = score_answers(args.answers, queries, every)
        print("\n".join(format_completeness(report)))
    else:
        report = run_variants(args, queries, tools)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
