"""What the per-key views cost a route: the usage prior and the query memory a key sees of its
own (``NamespaceView.prior_of(key)``, ``memory_of(key)``; app/loop/trust.py), in one
thread, every step's texts already in the embedding cache (as bench.perf.route_split).

    PYTHONPATH=. .venv/bin/python -m bench.perf.key_views DB [--keys 100] [--steps-per-key 10]

``DB``: a database bench.perf.route_cost filled (read only: the evidence is made here, in
memory). ``--keys`` keys each report ``--steps-per-key`` dataset steps, each for a tool of
the catalog (a tool per key and step), and use those tools: as no other key confirms them
(``trust_keys`` = 3), each key gets its own prior (the shared one plus its tools) and its
own memory (its steps at full weight), and every key sees the others' steps at a third of
their weight. The caches are filled as their ``refresh`` fills them (``keyed_priors``,
``build_memory``). Then the same 200 steps are ranked (``rank_step``), twice each, in four
ways, alternated over ``--rounds`` rounds: no evidence at all; the evidence, routed without
a key (the shared views only); as one key (its own views, the same every route); as a
different key each route (round robin).
Thread CPU per route, mean and p50; prints one line per way.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType

import numpy as np

from app.loop.memory import RememberedStep, build_memory
from app.loop.prior import keyed_priors
from app.loop.trust import Use
from app.route import service as rs
from app.schemas import RouteRequest
from app.services import Services
from bench.common import NAMESPACE, parser, public_steps, shared_data
from bench.registries import stored_services


def fill_evidence(services: Services, keys: int, per_key: int, texts: list[str]) -> None:
    """Each key's uses and remembered steps, in the caches as their refresh leaves them."""
    snapshot = services.index.get(NAMESPACE)
    assert snapshot is not None
    names = list(snapshot.index.names)
    rng = random.Random(11)
    now = datetime.now(UTC)
    uses, remembered = [], []
    for k in range(keys):
        key = f"key-{k}"
        for j in range(per_key):
            tool, text = rng.choice(names), texts[(k * per_key + j) % len(texts)]
            at = now - timedelta(hours=rng.uniform(0, 48))
            uses.append(Use(NAMESPACE, tool, "success", text, key, at))
            remembered.append(RememberedStep(tool, text, 1.0, 1, f"r{k}-{j}", at, frozenset({key})))
    prior, memory = services.prior, services.memory
    shared, own = keyed_priors(uses, now, prior.half_life_days, prior.needed)
    prior._priors = MappingProxyType({ns: MappingProxyType(t) for ns, t in shared.items()})
    by_namespace: dict[str, dict[str, Mapping[str, float]]] = defaultdict(dict)
    for (namespace, key), tools in own.items():  # as PriorCache.refresh groups them
        by_namespace[namespace][key] = MappingProxyType(tools)
    prior._own = MappingProxyType({ns: MappingProxyType(k) for ns, k in by_namespace.items()})
    vectors = np.asarray(services.encoder.encode([s.text for s in remembered]), np.float32)
    built = build_memory(remembered, vectors, memory.dims, memory.needed)
    memory._memories = MappingProxyType({NAMESPACE: built})
    print(
        f"evidence: {keys} keys x {per_key} steps; own priors {len(own)}, own memories "
        f"{len(built.own)}, shared memory rows {0 if built.memory is None else len(built.memory)}",
        flush=True,
    )


def timed_routes(
    services: Services,
    queries: list[str],
    vectors: dict[str, np.ndarray],
    key_of: Callable[[int], str | None],
) -> list[float]:
    """Thread CPU of ``rank_step`` for each query, twice; ``key_of(i)``: route i's key."""
    spent = []
    for i, query in enumerate(queries * 2):
        request = RouteRequest.model_validate({"query": query})
        texts = rs.step_texts(request, services.index)
        step = rs.EmbeddedStep(texts, vectors[query], 0.0)
        started = time.thread_time()
        rs.rank_step(request, services.routing, step, key_of(i))
        spent.append(time.thread_time() - started)
    return spent


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("db", type=Path, help="a database bench.perf.route_cost filled")
    cli.add_argument("--keys", type=int, default=100)
    cli.add_argument("--steps-per-key", type=int, default=10)
    cli.add_argument("--routes", type=int, default=200)
    cli.add_argument("--rounds", type=int, default=3)
    args = cli.parse_args(argv)
    with stored_services(args.db) as services:
        compare(services, args.keys, args.steps_per_key, args.routes, args.rounds)


def compare(services: Services, keys: int, per_key: int, routes: int, rounds: int) -> None:
    """The four ways alternated over ``rounds`` rounds; a line each."""
    queries = public_steps(shared_data())
    routed, reported = queries[:routes], queries[routes:]
    encode = services.encoder.encode
    vectors = {
        q: np.asarray(encode(rs.step_texts(RouteRequest(query=q), services.index)), np.float32)
        for q in routed
    }
    prior, memory = services.prior, services.memory
    empty = (prior._priors, prior._own, memory._memories)
    fill_evidence(services, keys, per_key, reported)
    filled = (prior._priors, prior._own, memory._memories)
    plan = {
        "no evidence": (empty, lambda i: None),
        "evidence, no key (shared views)": (filled, lambda i: None),
        "evidence, one key (its own views)": (filled, lambda i: "key-0"),
        f"evidence, {keys} keys in turn": (filled, lambda i: f"key-{i % keys}"),
    }
    ways: dict[str, list[float]] = {name: [] for name in plan}
    timed_routes(services, routed, vectors, lambda i: None)  # warm-up
    for _ in range(rounds):  # the ways alternated, so the machine's drift falls on all
        for name, (state, key_of) in plan.items():
            prior._priors, prior._own, memory._memories = state
            ways[name] += timed_routes(services, routed, vectors, key_of)
    base = statistics.mean(ways["no evidence"])
    for name, values in ways.items():
        mean, p50 = statistics.mean(values) * 1000, statistics.median(values) * 1000
        print(f"{name:36} mean {mean:.3f} ms  p50 {p50:.3f} ms  x{mean / base / 1000:.2f}")


if __name__ == "__main__":
    main()
