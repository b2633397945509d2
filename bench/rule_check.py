"""The rule check's settings, measured: a labelled dataset routed through the service's own
index (the ``toolreach eval`` path: parse, check, embed, store, load) once per router setting,
the queries embedded once.

    python bench/rule_check.py --data DIR --set mention_softening=0 --set mention_softening=1

Each ``--set key=value[,key=value]`` is one variant of ``RouterConfig`` (the service's
settings otherwise); the first row is the service's configuration as it stands. For each it
prints hit@1 and recall@3 (k = 10, the full pipeline, as ``toolreach eval`` reports them)
and how often the best candidate has a required parameter with no value; with ``--split
PREFIX`` also for the queries whose id starts with it (Seal-Tools' tuning split: ``dev-``)
and for the others.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.cli.evaluate import (
    NAMESPACE,
    load_dataset,
    mean_scores,
    read_jsonl,
    score,
    throwaway_services,
)
from app.db import unit_of_work
from app.embedding.encoders import Encoder
from app.routing import RouterConfig, query_texts, route
from app.settings import Settings
from app.tools.catalog import parse_batch, write_cards


def variant(base: RouterConfig, spec: str) -> RouterConfig:
    """``base`` with ``key=value[,key=value]`` applied (values read as the field's type)."""
    changes = {}
    for pair in filter(None, spec.split(",")):
        key, _, value = pair.partition("=")
        current = getattr(base, key)  # AttributeError names an unknown key
        changes[key] = type(current)(value)
    return dataclasses.replace(base, **changes)


def encode(encoder: Encoder, queries: Sequence[str]) -> list[np.ndarray]:
    """Per query, the rows ``route`` takes: the whole query, then each of its asks."""
    groups = [query_texts(q) for q in queries]
    flat = [text for group in groups for text in group]
    rows = np.asarray(encoder.encode(flat), dtype=np.float32)
    bounds = np.cumsum([0, *(len(g) for g in groups)])
    return [rows[bounds[i] : bounds[i + 1]] for i in range(len(groups))]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[], help="key=value[,key=value]")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries")
    parser.add_argument("--split", help="also report the queries whose id has this prefix")
    args = parser.parse_args(argv)
    tools, queries = load_dataset(args.data, args.limit)
    ids = [str(item.get("id", "")) for _, item in read_jsonl(args.data / "queries.jsonl")]
    inside = [i.startswith(args.split) for i in ids[: len(queries)]] if args.split else []
    with throwaway_services(Settings(), None) as services:
        batch = parse_batch(tools, NAMESPACE)
        with unit_of_work(services.session_factory) as session:
            write_cards(session, services.encoder, batch.cards)
        services.index.sync()
        snapshot = services.index.get(NAMESPACE)
        assert snapshot is not None
        vectors = encode(services.encoder, [q.text for q in queries])
        base = services.index.config
        print(f"{args.data.name}: {len(batch.cards)} tools, {len(queries)} queries")
        for spec in ["", *args.set]:
            config = variant(base, spec)
            rows, incomplete = [], 0
            for query, vector in zip(queries, vectors, strict=True):
                ranked = route(
                    snapshot.index,
                    query.text,
                    vector,
                    k=10,
                    config=config,
                    cosines=services.cosines,
                )
                rows.append(score([c.name for c in ranked], query.relevant))
                incomplete += bool(ranked and ranked[0].missing_required)
            groups = {"": rows}
            if args.split:
                groups[f" {args.split}"] = [r for r, i in zip(rows, inside, strict=True) if i]
                groups[" others"] = [r for r, i in zip(rows, inside, strict=True) if not i]
            for group, chosen in groups.items():
                metrics = mean_scores(chosen)
                print(
                    f"{(spec or 'as configured') + group:44s} hit@1 {metrics['hit@1']:.4f}  "
                    f"recall@3 {metrics['recall@3']:.4f}  ({len(chosen)} queries)"
                )
            print(f"  best has a missing parameter: {incomplete / max(len(queries), 1):.3f}")


if __name__ == "__main__":
    main()
