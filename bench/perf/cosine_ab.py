"""In-process A/B of the cosine first pass: route time per ``--dims`` variant, interleaved.

Each round embeds one query with the service's encoder and ranks it (``rank_step``, the
answer shaped as the API returns it, not recorded) once per variant, in a rotating order, so
the machine's drift (10-20 % within minutes here) falls on every variant alike. Every variant is the
service's ``CosineBatcher`` with the int8 copy made at ``dims`` dimensions (0 = all of them).
Synthetic cards (bench.registries; seeded random vectors). Reports medians:

    .venv/bin/python -m bench.perf.cosine_ab --tools 10000 --dims 0 256 --rounds 500
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np

from app.embedding.cosines import CosineBatcher
from app.route.service import EmbeddedStep, rank_step, step_texts
from app.schemas import RouteRequest
from app.services import build_encoder
from app.settings import Settings
from bench.common import QUERIES, WARM_UP, parser
from bench.registries import synthetic_services


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--tools", type=int, default=10_000)
    cli.add_argument("--dims", type=int, nargs="+", default=[0, 256])
    cli.add_argument("--rounds", type=int, default=500)
    args = cli.parse_args(argv)
    encoder = build_encoder(Settings(_env_file=None))
    with synthetic_services(args.tools, encoder) as services:
        settings = services.settings
        snapshot = services.index.get("default")
        assert snapshot is not None
        variants: dict[int, CosineBatcher] = {}
        for dims in args.dims:
            variants[dims] = CosineBatcher(
                int8_min_tools=settings.cosine_int8_min_tools, int8_dims=dims
            )
            variants[dims].prepare(snapshot.index.embeddings)
        embed: dict[int, list[float]] = {d: [] for d in args.dims}
        rank: dict[int, list[float]] = {d: [] for d in args.dims}
        print(f"{args.rounds} rounds ...", file=sys.stderr, flush=True)
        for i in range(-WARM_UP, args.rounds):
            request = RouteRequest(query=QUERIES[i % len(QUERIES)], k=3)
            turn = i % len(args.dims)
            for dims in args.dims[turn:] + args.dims[:turn]:
                started = time.perf_counter()
                texts = step_texts(request, services.index)
                vectors = np.asarray(services.encoder.encode(texts), dtype=np.float32)
                embedded = time.perf_counter()
                step = EmbeddedStep(texts, vectors, embedded - started, variants[dims])
                rank_step(request, services.routing, step)
                if i >= 0:
                    embed[dims].append(embedded - started)
                    rank[dims].append(time.perf_counter() - embedded)
    report = {"tools": args.tools, "rounds": args.rounds, "variants": []}
    for dims in args.dims:
        routes = [e + r for e, r in zip(embed[dims], rank[dims], strict=True)]
        e, r, t = (statistics.median(x) * 1000 for x in (embed[dims], rank[dims], routes))
        report["variants"].append(
            {
                "dims": dims,
                "embed_ms": round(e, 3),
                "rank_ms": round(r, 3),
                "route_ms": round(t, 3),
                "route_over_embed": round(t / e, 3),
            }
        )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
