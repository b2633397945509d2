"""The cost of reading a step as several parts: route latency of one-part and three-part
steps, side by side in one run.

A dataset's tools are registered as ``toolreach eval`` registers them. A three-part step
joins three of its single-tool steps ("A. Then, b. After that, c."); its one-part steps are
those three, each alone. Each round routes, interleaved so that the machine's drift falls on
all alike, through ``route_step`` (what ``POST /v1/route`` runs: embedding, ranking, the
answer, the route event):

- ``one part``: a single-tool step (one text embedded);
- ``three parts``: a three-part step (four texts: the step and its parts; a covering answer);
- ``three parts, split: false``: the same step read as one request (one text).

It prints p50 and p90 of the whole route and of its ranking alone (``rank_step`` on the
step's vectors), and the ratios to one part. The machine is shared: read the ratios.

    python -m bench.perf.parts_cost --data DIR [--rounds 300] [--k 5] [--json OUT]
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from typing import Any

from app.cli.evaluate import NAMESPACE, load_dataset
from app.route.service import EmbeddedStep, rank_step, route_step, step_texts
from app.routing import query_texts
from app.schemas import RouteRequest
from app.services import Services
from bench.common import add_data, add_json, ms, parser, percentile
from bench.registries import registered

# A router before parts had no ``split``: there the third kind is left out, and "three
# parts" is a step of three asks answered as one list (run from a checkout of it).
SPLITS = "split" in RouteRequest.model_fields
KINDS = ("one part", "three parts", "three parts, split: false")[: 3 if SPLITS else 2]
WARM_UP = 20


def three_part(steps: list[str]) -> str:
    a, b, c = (s.rstrip(".?! ") for s in steps)
    return f"{a}. Then, {b[0].lower()}{b[1:]}. After that, {c[0].lower()}{c[1:]}."


def requests(singles: list[str], rounds: int, k: int, seed: int = 7) -> list[dict[str, Any]]:
    """Each round's three requests; a three-part step is one the router reads as three."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    while len(out) < rounds:
        three = rng.sample(singles, 3)
        if len(query_texts(three_part(three))) != 4:
            continue
        step = three_part(three)
        round_ = {
            "one part": RouteRequest(query=three[0], k=k, namespace=NAMESPACE),
            "three parts": RouteRequest(query=step, k=k, namespace=NAMESPACE),
        }
        if SPLITS:
            round_[KINDS[2]] = RouteRequest(query=step, k=k, namespace=NAMESPACE, split=False)
        out.append(round_)
    return out


def timed(services: Services, request: RouteRequest) -> tuple[float, float, int]:
    """A whole route's seconds, its ranking's alone, and the texts it embedded."""
    started = time.perf_counter()
    route_step(request, services.routing)
    whole = time.perf_counter() - started
    texts = step_texts(request, services.index)
    vectors = services.encoder.encode(texts)
    started = time.perf_counter()
    rank_step(request, services.routing, EmbeddedStep(texts, vectors, 0.0))
    return whole, time.perf_counter() - started, len(texts)


def measure(services: Services, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    seen: dict[str, dict[str, list[float]]] = {
        k: {"route": [], "rank": [], "texts": []} for k in KINDS
    }
    for i, round_ in enumerate(rounds):
        for kind in KINDS:
            whole, rank, texts = timed(services, round_[kind])
            if i >= WARM_UP:
                seen[kind]["route"].append(whole)
                seen[kind]["rank"].append(rank)
                seen[kind]["texts"].append(texts)
    report: dict[str, Any] = {}
    base = {part: percentile(seen["one part"][part], 50) for part in ("route", "rank")}
    for kind, values in seen.items():
        row = {"texts_embedded": sum(values["texts"]) / len(values["texts"])}
        for part in ("route", "rank"):
            p50 = percentile(values[part], 50)
            row[f"{part}_p50_ms"] = ms(p50)
            row[f"{part}_p90_ms"] = ms(percentile(values[part], 90))
            row[f"{part}_p50_ratio"] = round(p50 / base[part], 2)
        report[kind] = row
    return report


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--rounds", type=int, default=300)
    cli.add_argument("--k", type=int, default=5)
    add_json(cli)
    args = cli.parse_args(argv)
    tools, queries = load_dataset(args.data)
    singles = [q.text for q in queries if len(q.relevant) == 1 and len(query_texts(q.text)) == 1]
    with registered(tools, examples=True) as (services, snapshot):
        report = measure(services, requests(singles, args.rounds + WARM_UP, args.k))
        cards = len(snapshot.cards)
    print(f"{args.data.name}: {cards} tools, {args.rounds} rounds, k = {args.k}")
    for kind, row in report.items():
        route = f"route p50 {row['route_p50_ms']:8.2f} ms (×{row['route_p50_ratio']:.2f})"
        rank = f"rank p50 {row['rank_p50_ms']:7.3f} ms (×{row['rank_p50_ratio']:.2f})"
        print(
            f"{kind:28s} texts {row['texts_embedded']:.1f}  {route} p90 "
            f"{row['route_p90_ms']:8.2f}  {rank} p90 {row['rank_p90_ms']:.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
