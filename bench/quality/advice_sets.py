"""The card doctor on the public eval sets (issue 31): how much hit@1 the applied advice
recovers, and how many items the replay refuses, with the real model.

    PYTHONPATH=. HF_HUB_OFFLINE=1 python -m bench.quality.advice_sets \\
        --data /work/shared/data/metatool [--limit N] [--fraction 0.5] [--seed 0] [--k 3] \\
        [--kinds miss,parameter] [--json]

The dataset (``load_dataset``, as ``toolreach eval``) goes into a throwaway registry with the
service's default encoder (``Settings().encoder``). A seeded share ``--fraction`` of its
queries is replayed as reports: each routed through the service's own path (``route_step``,
``k`` candidates; the event writer records it) and reported with its labelled tool as the
one chosen (``pick_choice``: an offered label, else the first). The doctor then lists every
finding with its replay (``app.advice.service.advise``, the code of ``GET /v1/advice``),
and every offered item is applied, in order, through the registry's write path
(``write_cards``; an item that edits a field an applied item edited already is skipped: its
value was computed on the card before). Reported:

- items offered, by kind; refused, by kind and reason (broke a case / fixed none / gaming);
- with ``--kinds``, only the offered items of those kinds are applied (the others are
  still listed and counted);
- each report carries one of 20 keys (``agent-0`` … ``agent-19``): bounded influence
  (``trust_keys``) weighs them as the service does;
- hit@1 before and after on (a) the reported steps, (b) the held-out queries one of whose
  tools an applied item names or edits, (c) all held-out queries.

hit@1 is read as the replay reads it (``replay.firsts``: the index's stages; no usage prior,
query memory or card-examples vote). The query encoder is wrapped in a cache, since a replay
routes the same steps once per finding.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.advice import service as doctor
from app.advice.finding import Finding, edited
from app.advice.replay import Replay, firsts
from app.cli.eval_prior import _load, split
from app.cli.evaluate import NAMESPACE, Query, load_dataset, throwaway_services
from app.cli.progress import progress_iter
from app.cli.simulate import pick_choice
from app.db import unit_of_work
from app.loop.feedback import record_feedback
from app.route.service import route_step
from app.schemas import FeedbackRequest, RouteRequest
from app.services import Services, build_encoder
from app.settings import Settings
from app.tools.catalog import write_cards
from bench.common import TextCache, add_data, parser


def report_steps(services: Services, queries: Sequence[Query], k: int) -> None:
    """Route each query as the API does and report its labelled tool as chosen."""
    reports = []
    for number, query in enumerate(progress_iter(queries, "reporting steps", unit="step")):
        response = route_step(
            RouteRequest(query=query.text, namespace=NAMESPACE, k=k), services.routing
        )
        chosen = pick_choice(query.relevant, [c.name for c in response.candidates])
        report = FeedbackRequest(route_id=response.route_id, chosen=chosen, outcome="success")
        reports.append((report, f"agent-{number % 20}"))
    services.events.flush()
    with unit_of_work(services.session_factory) as session:
        for report, key in reports:
            record_feedback(session, services.events, services.index, report, key_id=key)


def hits(services: Services, queries: Sequence[Query]) -> list[bool]:
    snapshot = services.index.get(NAMESPACE)
    assert snapshot is not None
    got = firsts(snapshot.index, services.encoder, [q.text for q in queries])
    return [g in q.relevant for g, q in zip(got, queries, strict=True)]


def apply_all(services: Services, offered: Sequence[Finding]) -> tuple[list[Finding], int]:
    """Write every offered item's changes (the cards as the items before left them); an
    item editing a (tool, field) already edited is skipped. (applied, skipped)."""
    snapshot = services.index.get(NAMESPACE)
    assert snapshot is not None
    current = dict(snapshot.cards)
    touched: set[tuple[str, str]] = set()
    applied, skipped = [], 0
    for finding in offered:
        fields = {(c.tool, c.field) for c in finding.changes}
        if fields & touched:
            skipped += 1
            continue
        touched |= fields
        current.update(edited(current, finding.changes))
        applied.append(finding)
    changed = sorted({c.tool for f in applied for c in f.changes})
    with unit_of_work(services.session_factory) as session:
        write_cards(session, services.encoder, [current[name] for name in changed])
    services.index.sync()
    return applied, skipped


def counts(before: list[bool], after: list[bool]) -> dict[str, int]:
    pairs = list(zip(before, after, strict=True))
    return {
        "n": len(pairs),
        "hit1_before": sum(before),
        "hit1_after": sum(after),
        "fixed": sum(not b and a for b, a in pairs),
        "broken": sum(b and not a for b, a in pairs),
    }


def items(checked: Sequence[tuple[Finding, Replay]]) -> dict[str, Any]:
    offered = Counter(f.kind for f, r in checked if r.offered())
    refused = Counter(f"{f.kind}:{r.refused()}" for f, r in checked if not r.offered())
    by_reason = dict(sorted(refused.items()))
    return {"found": len(checked), "offered": dict(offered), "refused": by_reason}


def run(
    data: Path,
    limit: int | None,
    fraction: float,
    seed: int,
    k: int,
    kinds: frozenset[str] = frozenset({"confusion", "miss", "parameter"}),
) -> dict[str, Any]:
    settings = Settings()
    tools, queries = load_dataset(data, limit)
    encoder = TextCache(build_encoder(settings))  # the replays route the same steps again
    started = time.perf_counter()
    with throwaway_services(settings, encoder) as services:
        loaded = _load(services, tools, data / "tools.jsonl")
        playable = [Query(q.text, q.relevant & loaded) for q in queries if q.relevant & loaded]
        fed, held = split(playable, fraction, seed)
        report_steps(services, fed, k)
        before = {"reported": hits(services, fed), "held_out": hits(services, held)}
        budget = doctor.Budget(seconds=86_400.0)  # a bench waits as long as it takes
        advice = doctor.advise(
            services.session_factory,
            services.index,
            services.encoder,
            NAMESPACE,
            settings.trust_keys,
            budget,
        )
        checked = advice.checked
        offered = [f for f, r in checked if r.offered() and f.kind in kinds]
        applied, skipped = apply_all(services, offered)
        after = {"reported": hits(services, fed), "held_out": hits(services, held)}
    named = {t for f in applied for t in (*f.tools, *(c.tool for c in f.changes))}
    touched = [bool(q.relevant & named) for q in held]
    pick = [i for i, t in enumerate(touched) if t]
    return {
        "dataset": str(data),
        "model": encoder.name,
        "tools": len(loaded),
        "queries": len(playable),
        "limit": limit,
        "fraction": fraction,
        "seed": seed,
        "k": k,
        "applied_only": sorted(kinds),
        "items": {**items(checked), "applied": len(applied), "skipped_overlap": skipped},
        "applied_kinds": dict(Counter(f.kind for f in applied)),
        "hit1": {
            "reported": counts(before["reported"], after["reported"]),
            "held_out_touched": counts(
                [before["held_out"][i] for i in pick], [after["held_out"][i] for i in pick]
            ),
            "held_out_all": counts(before["held_out"], after["held_out"]),
        },
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--limit", type=int, default=None, help="the first N queries only")
    cli.add_argument("--fraction", type=float, default=0.5, help="share replayed as reports")
    cli.add_argument("--seed", type=int, default=0)
    cli.add_argument("--k", type=int, default=3, help="candidates per reported route")
    cli.add_argument("--kinds", default="confusion,miss,parameter", help="kinds applied")
    cli.add_argument("--json", action="store_true")
    args = cli.parse_args(argv)
    kinds = frozenset(args.kinds.split(","))
    report = run(args.data, args.limit, args.fraction, args.seed, args.k, kinds)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(json.dumps({k: v for k, v in report.items() if k != "hit1"}))
    for name, row in report["hit1"].items():
        print(
            f"{name:<18} n={row['n']:<5} hit@1 {row['hit1_before']} -> {row['hit1_after']} "
            f"(fixed {row['fixed']}, broken {row['broken']})",
            file=sys.stdout,
        )


if __name__ == "__main__":
    main()
