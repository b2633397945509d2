"""The rule check's settings, measured: a labelled dataset routed through the service's own
index (the ``toolreach eval`` path: parse, check, embed, store, load) once per router setting,
the queries embedded once.

    python -m bench.quality.rule_check --data DIR --set mention_softening=0 \\
        --set mention_softening=1

Each ``--set key=value[,key=value]`` is one variant of ``RouterConfig`` (the service's
settings otherwise); the first row is the service's configuration as it stands. For each it
prints hit@1 and recall@3 (k = 10, the full pipeline, as ``toolreach eval`` reports them)
and how often the best candidate has a required parameter with no value; with ``--split
PREFIX`` also for the queries whose id starts with it (Seal-Tools' tuning split: ``dev-``)
and for the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from app.cli.evaluate import load_dataset, mean_scores, read_jsonl, score
from app.routing import NamespaceView, RouteOptions, Router, RouterConfig
from bench.common import add_data, parser, step_rows
from bench.registries import registered


def variant(base: RouterConfig, spec: str) -> RouterConfig:
    """``base`` with ``key=value[,key=value]`` applied (values read as the field's type)."""
    changes = {}
    for pair in filter(None, spec.split(",")):
        key, _, value = pair.partition("=")
        current = getattr(base, key)  # AttributeError names an unknown key
        changes[key] = type(current)(value)
    return dataclasses.replace(base, **changes)


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--set", action="append", default=[], help="key=value[,key=value]")
    cli.add_argument("--limit", type=int, default=None, help="only the first N queries")
    cli.add_argument("--split", help="also report the queries whose id has this prefix")
    args = cli.parse_args(argv)
    tools, queries = load_dataset(args.data, args.limit)
    ids = [str(item.get("id", "")) for _, item in read_jsonl(args.data / "queries.jsonl")]
    inside = [i.startswith(args.split) for i in ids[: len(queries)]] if args.split else []
    with registered(tools) as (services, snapshot):
        vectors = step_rows(services.encoder.encode, [q.text for q in queries])
        base, view = services.index.config, NamespaceView(snapshot.index)
        print(f"{args.data.name}: {len(snapshot.cards)} tools, {len(queries)} queries")
        for spec in ["", *args.set]:
            router = Router(variant(base, spec), cosines=services.cosines)
            rows, incomplete = [], 0
            for query, vector in zip(queries, vectors, strict=True):
                ranked = router.route(view, query.text, vector, RouteOptions(k=10))
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
