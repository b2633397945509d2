"""`toolreach eval --replay-feedback F`: what a namespace learns from its reports.

The queries are split by a seeded shuffle. A share ``F`` of them is replayed as an agent
would: routed through the service's own path (the event writer records each route) and
reported as feedback (each labelled tool its answer shows, else one; outcome success). The
held-out queries are scored by the full pipeline before the reports ("cold start") and
after them with no model ("no_prior": the usage prior and query memory move no route by
themselves since issue 41, so the two are equal), and with ``--learn`` with the reranker
the guard trains from them (app/learning/guard.py) — overall, and split into queries whose
tool was reported in the feedback ("seen") and those whose tool never was ("unseen": there
it must not hurt).
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.cli.evaluate import (
    METRICS,
    NAMESPACE,
    DatasetError,
    Query,
    load_dataset,
    loaded_tools,
    mean_scores,
    score,
    throwaway_services,
)
from app.cli.progress import progress_iter
from app.cli.simulate import pick_choice
from app.db import unit_of_work
from app.embedding.encoders import Encoder
from app.learning.guard import challenge
from app.loop.feedback import record_feedback
from app.route.service import route_step
from app.routing import NamespaceView, RouteOptions, Router, query_texts
from app.routing.calibration import expected_calibration_error
from app.routing.reranker import Learned
from app.routing.types import RouterConfig
from app.schemas import FeedbackRequest, RouteRequest
from app.services import Services
from app.settings import Settings
from app.tools.catalog import parse_batch, write_cards
from app.tools.examples import text_vectors

GROUPS = ("all", "seen", "unseen")


def split(queries: Sequence[Query], fraction: float, seed: int) -> tuple[list[Query], list[Query]]:
    """(feedback queries, held-out queries): a seeded shuffle cut at `fraction`."""
    if not 0 < fraction < 1:
        raise ValueError("the feedback fraction must be between 0 and 1 (exclusive)")
    order = list(queries)
    random.Random(seed).shuffle(order)
    cut = min(max(round(len(order) * fraction), 1), len(order) - 1)  # neither side empty
    return order[:cut], order[cut:]


HONEST_KEYS = 20  # the replayed reports come from this many agents' keys, in turn
POISON_KEY = "poisoner"
FLUSH_EVERY = 500  # routes between flushes of the event buffer (bounded: it drops the oldest)
FLOOD = 20  # each poisoned report is sent this many times (each on its own route)


def replay_feedback(
    services: Services,
    queries: Sequence[Query],
    poisoned: Mapping[int, str] | None = None,
) -> None:
    """Route each query as the API does, then report as a success each labelled tool its
    answer shows (``right_tools``: an agent whose step needs two tools calls both), from one
    of ``HONEST_KEYS`` keys. A route holds one report (app/loop/feedback.py: a second one
    naming another tool is refused), so each further tool is reported on a route of its own
    of the same step text, as an agent routing each call would. ``poisoned``: query number
    → a wrong tool, reported instead, ``FLOOD`` times, by one key."""
    reports: list[tuple[FeedbackRequest, str]] = []
    poisoned = poisoned or {}
    for number, query in enumerate(progress_iter(queries, "replaying feedback", unit="query")):
        wrong = poisoned.get(number)
        key = POISON_KEY if wrong else f"agent-{number % HONEST_KEYS}"
        for _ in range(FLOOD if wrong else 1):
            request = RouteRequest(query=query.text, namespace=NAMESPACE, k=10)
            response = route_step(request, services.routing)
            chosen = (
                [wrong]
                if wrong
                else right_tools(query.relevant, [c.name for c in response.candidates])
            )
            for n, tool in enumerate(chosen):
                routed = response if n == 0 else route_step(request, services.routing)
                report = FeedbackRequest(route_id=routed.route_id, chosen=tool, outcome="success")
                reports.append((report, key))
        if number % FLUSH_EVERY == FLUSH_EVERY - 1:  # the event buffer is bounded
            services.events.flush()
    services.events.flush()
    with unit_of_work(services.session_factory) as session:
        for report, key in reports:
            record_feedback(session, services.events, services.index, report, key_id=key)


# What ``replay_feedback`` reports (a cache of its products names it): 2, each right tool
# an answer shows; 1 (before), one pick.
REPLAY_VERSION = 2


def right_tools(relevant: Collection[str], candidates: Sequence[str]) -> list[str]:
    """The labelled tools among a route's ``candidates``, in their order; if none is shown,
    the one an agent calls anyway (``pick_choice``)."""
    shown = [name for name in candidates if name in relevant]
    return shown or [pick_choice(relevant, candidates)]


def poison(
    queries: Sequence[Query], tools: Sequence[str], share: float, seed: int
) -> dict[int, str]:
    """A seeded ``share`` of the queries (by number), each with a tool it does not name."""
    if share <= 0:
        return {}
    rng = random.Random(seed + 1)
    picked = rng.sample(range(len(queries)), max(1, round(len(queries) * share)))
    names = sorted(tools)
    out = {}
    for number in picked:
        wrong = rng.choice(names)
        while wrong in queries[number].relevant:
            wrong = rng.choice(names)
        out[number] = wrong
    return out


def encode_queries(encoder: Encoder, queries: Sequence[Query]) -> list[np.ndarray]:
    """As route_step does: row 0 embeds the whole query, further rows its separate asks."""
    return [
        np.asarray(encoder.encode(query_texts(q.text)), dtype=np.float32)
        for q in progress_iter(queries, "embedding queries", unit="query")
    ]


def score_queries(
    services: Services,
    queries: Sequence[Query],
    vectors: Sequence[np.ndarray],
    learned: Learned | None = None,
    config: RouterConfig | None = None,
) -> list[dict[str, float]]:
    """Each query's scores, and its top candidate's confidence (``confidence``: 0 for an
    empty answer)."""
    snapshot = services.index.get(NAMESPACE)
    assert snapshot is not None
    rows = []
    router = Router(config or services.index.config)
    view = NamespaceView(snapshot.index, learned=learned)
    for query, vector in zip(queries, vectors, strict=True):
        ranked = router.route(view, query.text, vector, RouteOptions(k=10))
        row = score([c.name for c in ranked], query.relevant)
        row["confidence"] = ranked[0].confidence if ranked else 0.0
        rows.append(row)
    return rows


def top_ece(rows: Sequence[dict[str, float]]) -> float | None:
    """The top candidate's expected calibration error over ``rows`` (``no_fit.py``'s)."""
    if not rows:
        return None
    conf = [r["confidence"] for r in rows]
    return round(expected_calibration_error(conf, [r["hit@1"] > 0 for r in rows]), 4)


def grouped(rows: list[dict[str, float]], seen: list[bool]) -> dict[str, dict[str, Any]]:
    """Mean scores over all held-out queries, the seen ones and the unseen ones."""
    picks = {
        "all": rows,
        "seen": [r for r, s in zip(rows, seen, strict=True) if s],
        "unseen": [r for r, s in zip(rows, seen, strict=True) if not s],
    }
    return {
        g: {
            "queries": len(p),
            **(mean_scores(p) if p else dict.fromkeys(METRICS)),
            "ece": top_ece(p),
        }
        for g, p in picks.items()
    }


def _load(services: Services, tools: list[dict[str, Any]], path: Path) -> set[str]:
    """Register the dataset's valid tools; returns their names."""
    batch = parse_batch(tools, NAMESPACE)
    names = loaded_tools(batch, path)
    with unit_of_work(services.session_factory) as session:
        write_cards(session, services.encoder, batch.cards)
    services.index.sync()
    return names


def unreported_tools(tools: Collection[str], share: float, seed: int) -> frozenset[str]:
    """A seeded ``share`` of ``tools`` that no report will name (``replay_prior``)."""
    if share <= 0:
        return frozenset()
    names = sorted(tools)
    return frozenset(random.Random(seed + 2).sample(names, round(len(names) * share)))


def replay_prior(
    data: Path,
    settings: Settings,
    fraction: float,
    encoder: Encoder | None = None,
    limit: int | None = None,
    seed: int = 0,
    poison_share: float = 0.0,
    learn: bool = False,
    unreported: float = 0.0,
) -> dict[str, Any]:
    """Score held-out queries cold, before and after the reports (which must be the same:
    the usage prior and query memory move no route by themselves), and with ``learn`` the
    reranker trained from the reports as a serving process trains it. ``poison_share``:
    that share of the replayed reports name a wrong tool, flooded from one key
    (``replay_feedback``). ``unreported``: that share of the tools are never reported (their
    queries are not replayed), so that many held-out queries have a tool without reports."""
    tools, queries = load_dataset(data, limit)
    with throwaway_services(settings, encoder) as services:
        loaded = _load(services, tools, data / "tools.jsonl")
        playable = [Query(q.text, q.relevant & loaded) for q in queries if q.relevant & loaded]
        if len(playable) < 2:
            raise DatasetError(
                f"{data / 'queries.jsonl'}: {len(playable)} queries name a registered tool; "
                "replaying feedback needs at least 2"
            )
        fed, held = split(playable, fraction, seed)
        silent = unreported_tools(loaded, unreported, seed)
        fed = [q for q in fed if not q.relevant & silent]
        vectors = encode_queries(services.encoder, held)
        memories = services.memory
        assert memories is not None
        memories.refresh()  # no feedback yet
        cold_start = score_queries(services, held, vectors)
        poisoned = poison(fed, sorted(loaded), poison_share, seed)
        replay_feedback(services, fed, poisoned)
        memories.refresh()
        memory = memories.get(NAMESPACE)
        after = score_queries(services, held, vectors)
        learning: dict[str, Any] = {}
        if learn:
            learning = learned_variants(services, settings, held, vectors)
    reported = {name for i, q in enumerate(fed) if i not in poisoned for name in q.relevant}
    seen = [bool(q.relevant & reported) for q in held]
    return {
        "dataset": str(data),
        "tools": len(loaded),
        "feedback_queries": len(fed),
        "held_out_queries": len(held),
        "fraction": fraction,
        "seed": seed,
        "model": services.encoder.name,
        "tools_reported": len(reported),
        "unreported_tools": len(silent),
        "poisoned_reports": len(poisoned) * FLOOD,
        "remembered_steps": 0 if memory is None else len(memory),
        "tools_with_memory": 0 if memory is None else len(memory.tools),
        "results": {
            "cold_start": grouped(cold_start, seen),
            "no_prior": grouped(after, seen),
            **{name: grouped(rows, seen) for name, rows in learning.pop("rows", {}).items()},
        },
        **({"learning": learning} if learn else {}),
    }


def learned_variants(
    services: Services,
    settings: Settings,
    held: Sequence[Query],
    vectors: Sequence[np.ndarray],
) -> dict[str, Any]:
    """The guard's challenger (app/learning/guard.py), trained on the remembered steps as a
    serving process trains it, scored on the held-out queries (``learned``: calibrated;
    ``served``: what serves after the guard, the challenger or the cold ranking);
    ``verdict``: what the guard decided, and why."""
    snapshot = services.index.get(NAMESPACE)
    memories = services.memory
    assert snapshot is not None and memories is not None
    steps = memories.steps(NAMESPACE)
    with unit_of_work(services.session_factory) as session:
        step_vectors = text_vectors(session, services.encoder, [s.text for s in steps])
    began = time.perf_counter()
    learned, verdict = challenge(
        snapshot.index, steps, step_vectors, settings.trust_keys, services.index.config, None
    )
    seconds = round(time.perf_counter() - began, 1)
    if learned is None:
        return {"verdict": verdict.summary(), "seconds": seconds, "rows": {}}
    rows = score_queries(services, held, vectors, learned=learned)
    return {
        "verdict": verdict.summary(),
        "seconds": seconds,
        "delta": learned.ranker.delta,
        "rows": {
            "learned": rows,
            "served": rows if verdict.promoted else score_queries(services, held, vectors),
        },
    }


def format_replay(report: dict[str, Any]) -> str:
    lines = [
        f"{report['dataset']}: {report['tools']} tools, model {report['model']}; "
        f"{report['feedback_queries']} queries replayed as feedback "
        f"({report['tools_reported']} tools reported), "
        f"{report['held_out_queries']} held out",
        f"{'variant':<14}{'group':<8}{'queries':>8}"
        + "".join(f"{m:>10}" for m in (*METRICS, "ece")),
    ]
    for variant, groups in report["results"].items():
        for group in GROUPS:
            values = groups[group]
            cells = (
                f"{values[m]:>10.3f}" if values[m] is not None else f"{'-':>10}"
                for m in (*METRICS, "ece")
            )
            lines.append(f"{variant:<14}{group:<8}{values['queries']:>8}" + "".join(cells))
    if "learning" in report:
        lines.append(f"learning: {report['learning']['verdict']}")
    return "\n".join(lines)
