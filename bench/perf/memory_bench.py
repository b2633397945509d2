"""What query memory costs a route: ranking time with and without it, side by side.

    .venv/bin/python -m bench.perf.memory_bench --tools 10000 --steps 100000 --rounds 400

Synthetic cards (bench.registries), and ``--steps`` remembered steps spread over the tools
at random, each step's vector its tool's vector plus noise (cosine ~0.7 with it: steps
resemble their tool). Each round embeds one query with the service's encoder, then ranks it
(``rank_step``, the service's cosine product; not recorded) twice, without memory and with
it, in alternating order. Prints the medians in ms and the memory's size, as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np

import app.route.service as routes_service
from app.route.views import Current, NamespaceViews
from app.routing.memory import QueryMemory
from app.schemas import RouteRequest
from app.services import build_encoder
from app.settings import Settings
from bench.common import QUERIES, WARM_UP, parser
from bench.registries import synthetic_services


class FixedView(NamespaceViews):
    """Stands in for the service's views: one namespace's view, for every namespace."""

    def __init__(self, current: Current) -> None:
        self.current = current

    def get(self, namespace: str) -> Current | None:
        return self.current


def synthetic_memory(
    names: tuple[str, ...], tools: np.ndarray, steps: int, dims: int
) -> QueryMemory:
    """``steps`` remembered steps of random tools, each near its tool's vector, kept on
    ``dims`` principal directions as the service keeps them."""
    rng = np.random.default_rng(7)
    owner = rng.integers(0, len(names), steps)
    noise = rng.standard_normal((steps, tools.shape[1])).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = tools[owner] + noise
    weights = rng.uniform(0.2, 1.0, steps).astype(np.float32)
    memory = QueryMemory.build([names[i] for i in owner], vectors, weights, dims)
    assert memory is not None
    return memory


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--tools", type=int, default=10_000)
    cli.add_argument("--steps", type=int, default=100_000)
    cli.add_argument("--rounds", type=int, default=400)
    args = cli.parse_args(argv)
    encoder = build_encoder(Settings(_env_file=None))
    times: dict[str, list[float]] = {"without": [], "with": []}
    with synthetic_services(args.tools, encoder) as services:
        snapshot = services.index.get("default")
        assert snapshot is not None
        index = snapshot.index
        config = services.index.config
        memory = synthetic_memory(index.names, index.embeddings, args.steps, config.memory_dims)
        current = services.routing.views.get("default")
        assert current is not None
        deps = {  # the service's routing, its view with no memory and with this one
            variant: dataclasses.replace(
                services.routing,
                views=FixedView(Current(snapshot, dataclasses.replace(current.view, memory=m))),
            )
            for variant, m in (("without", None), ("with", memory))
        }
        print(f"{args.rounds} rounds ...", file=sys.stderr, flush=True)
        for i in range(-WARM_UP, args.rounds):
            request = RouteRequest(query=QUERIES[i % len(QUERIES)], k=3)
            texts = routes_service.step_texts(request, services.index)
            vectors = np.asarray(services.encoder.encode(texts), dtype=np.float32)
            step = routes_service.EmbeddedStep(texts, vectors, 0.0)
            order = ("without", "with") if i % 2 else ("with", "without")
            for variant in order:
                started = time.perf_counter()
                routes_service.rank_step(request, deps[variant], step)
                if i >= 0:
                    times[variant].append(time.perf_counter() - started)

    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 3)

    without, with_memory = ms(times["without"]), ms(times["with"])
    report = {
        "tools": args.tools,
        "remembered_steps": len(memory),
        "rounds": args.rounds,
        "rank_ms_without_memory": without,
        "rank_ms_with_memory": with_memory,
        "growth": round(with_memory / without - 1, 3),
        "memory_pool": config.memory_pool,
        "memory_dims": config.memory_dims,
        "memory_mb": round(memory.nbytes / 1e6, 1),
        "memory_mb_per_100k_steps": round(memory.nbytes / 1e6 * 100_000 / len(memory), 1),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
