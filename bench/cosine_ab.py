"""In-process A/B of the cosine first pass: route time per ``--dims`` variant, interleaved.

Each round embeds one query with the service's encoder and ranks it (``rank_step``, the
answer shaped as the API returns it, not recorded) once per variant, in a rotating order, so
the machine's drift (10-20 % within minutes here) falls on every variant alike. Every variant is the
service's ``CosineBatcher`` with the int8 copy made at ``dims`` dimensions (0 = all of them).
Synthetic cards as in route_bench.py (seeded random vectors). Reports medians:

    .venv/bin/python bench/cosine_ab.py --tools 10000 --dims 0 256 --rounds 500
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.embedding.cosines import CosineBatcher
from app.route.service import EmbeddedStep, rank_step, step_texts
from app.schemas import RouteRequest
from app.services import build_encoder
from app.settings import Settings
from bench.load_client import QUERIES
from bench.route_bench import WARM_UP, synthetic_services


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--dims", type=int, nargs="+", default=[0, 256])
    parser.add_argument("--rounds", type=int, default=500)
    args = parser.parse_args()
    encoder = build_encoder(Settings(_env_file=None))  # type: ignore[call-arg]
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
                rank_step(request, services, step)
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
