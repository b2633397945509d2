"""How often the int8 first pass changes a route's answer, on a real dataset.

Registers a dataset's tools as ``toolreach eval`` does, then routes every query twice through
the same ``Router.route`` call: with exact float32 cosines, and with the service's int8 first pass
forced on (``app/embedding/cosines.py``: ``--dims`` int8 directions, ``--moment-dims`` for the rows'
mean and spread). Reports, for the top 1, the top 3 and the top 10, the share of queries whose
tools are the same (in order), split into one-part and several-part queries, and hit@1 /
recall@3 of both:

    .venv/bin/python -m bench.quality.int8_fidelity --data ../shared/data/seal-tools
    .venv/bin/python -m bench.quality.int8_fidelity --data ../shared/data/metatool --dims 256
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from app.cli.evaluate import _encode_queries, load_dataset, score
from app.embedding.cosines import CosineBatcher
from app.routing import NamespaceView, RouteOptions, Router
from app.routing.signals import gemv_rows
from app.services import build_encoder
from app.settings import Settings
from bench.common import add_data, parser
from bench.registries import registered


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--dims", type=int, default=128)
    cli.add_argument("--moment-dims", type=int, default=256)
    cli.add_argument("--limit", type=int, default=None, help="the first N queries only")
    args = cli.parse_args(argv)
    settings = Settings(_env_file=None)
    encoder = build_encoder(settings)
    tools, queries = load_dataset(args.data, args.limit)
    print(f"embedding {len(tools)} tools ...", file=sys.stderr, flush=True)
    with registered(tools, settings, encoder) as (services, snapshot):
        index = snapshot.index
        vectors = _encode_queries(services.encoder, [q.text for q in queries])
    int8 = CosineBatcher(int8_min_tools=1, int8_dims=args.dims, moment_dims=args.moment_dims)
    int8.prepare(index.embeddings)
    same = {kind: {1: 0, 3: 0, 10: 0, "queries": 0} for kind in ("one part", "several parts")}
    quality: dict[str, list[dict[str, float]]] = {"float32": [], "int8": []}
    print(f"routing {len(queries)} queries twice ...", file=sys.stderr, flush=True)
    view, options = NamespaceView(index), RouteOptions(k=10)
    routers = {
        name: Router(index.config, cosines=c)
        for name, c in (("float32", gemv_rows), ("int8", int8))
    }
    for query, vector in zip(queries, vectors, strict=True):
        answers = {}
        for name, router in routers.items():
            ranked = router.route(view, query.text, vector, options)
            answers[name] = [c.name for c in ranked]
            quality[name].append(score(answers[name], query.relevant))
        kind = "one part" if len(vector) == 1 else "several parts"
        same[kind]["queries"] += 1
        for top in (1, 3, 10):
            same[kind][top] += answers["float32"][:top] == answers["int8"][:top]
    report = {
        "dataset": str(args.data),
        "tools": len(index),
        "int8_dims": args.dims,
        "moment_dims": args.moment_dims,
        "same_top": {
            kind: {
                "queries": counts["queries"],
                **{
                    f"top{top}": round(counts[top] / max(counts["queries"], 1), 4)
                    for top in (1, 3, 10)
                },
            }
            for kind, counts in same.items()
        },
        "quality": {
            name: {
                metric: round(sum(r[metric] for r in rows) / len(rows), 4)
                for metric in ("hit@1", "recall@3")
            }
            for name, rows in quality.items()
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
