"""The learning replay: reranker designs, and the guard, on replayed reports
(docs/ROUTING.md, "Learning from reports"; issue 41).

For each seed a share ``--fraction`` of a dataset's queries is replayed as reports through
the service (``toolreach eval --replay-feedback``'s replay: routed, reported as successes
by 20 keys; ``--poison`` of them naming a wrong tool, flooded from one key;
``--unreported`` of the tools never reported), and the rest held out. The replay's
products (the remembered steps, their vectors, the index) are kept in ``--cache``, so each
design is only trained and scored. For each design: a reranker trained on every remembered
step, scored on the held-out queries (hit@1 on those whose tool has reports and those
whose tool has none, the top candidate's calibration error, also on the queries of one
tool alone: ``ece_one``), beside the cold ranking;
``guard``: what the guard (app/learning/guard.py) trains and promotes, as a serving
process would (the calibrated challenger if promoted, else the cold ranking). ``default``
and ``guard`` train the served trees (``training.DEFAULT_TREES``: scikit-learn's binary
ones, which ``binary`` and ``guard_binary`` name outright); ``rank`` and ``guard_rank``
LightGBM's lambdarank; a design naming a field of ``Trees`` starts from ``Trees()``. A
design trained on every step also reports its training steps' hit@1 out of fold
(``oof_cold``, ``oof``: what a design may be tuned on).

    python -m bench.quality.learn_tune --data /work/shared/data/metatool --fraction 0.5 \
        --seeds 0 1 2 --designs default guard
"""

from __future__ import annotations

import hashlib
import json
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.cli.eval_prior import (
    REPLAY_VERSION,
    _load,
    encode_queries,
    poison,
    replay_feedback,
    split,
    unreported_tools,
)
from app.cli.evaluate import NAMESPACE, Query, load_dataset, throwaway_services
from app.db import unit_of_work
from app.learning.guard import challenge
from app.learning.training import (
    DEFAULT_TREES,
    FOLDS,
    Trees,
    bank_of,
    choose_delta,
    first_hits,
    out_of_fold,
    train_reranker,
    training_rows,
)
from app.loop.memory import RememberedStep
from app.routing import NamespaceView, RouteOptions, Router
from app.routing.calibration import expected_calibration_error
from app.routing.index import RouterIndex
from app.routing.reranker import Bank, Learned, Reranker
from app.routing.types import Candidate, RouterConfig
from app.settings import Settings
from app.tools.examples import text_vectors
from bench.common import add_data, parser

DESIGNS: dict[str, dict[str, Any]] = {
    "default": {},  # the service's trees (training.DEFAULT_TREES)
    "binary": {"objective": "binary"},  # scikit-learn's binary trees, 15 leaves (the default)
    "guard_binary": {"guard": True, "objective": "binary"},
    "depth10": {"depth": 10},
    "depth30": {"depth": 30},  # the cold top 30 as the candidates (docs/ROUTING.md)
    "depth50": {"depth": 50},
    "trees200": {"iterations": 200, "learning_rate": 0.05},
    "leaves31": {"leaves": 31},
    "guard": {"guard": True},  # as the service runs it (guard.py's EXAM_BLOCKS, REFIT)
    # LightGBM's lambdarank trees, each step's candidates one group (training.Trees)
    "rank": {"objective": "lambdarank", "leaves": 31},
    "guard_rank": {"guard": True, "objective": "lambdarank", "leaves": 31},
    # the ranker's parameters tried, on the out-of-fold hit@1 of the training steps and the
    # guard's exam (docs/ROUTING.md)
    "rank_l7": {"objective": "lambdarank", "leaves": 7},
    "rank_l31": {"objective": "lambdarank", "leaves": 31},
    "rank_m5": {"objective": "lambdarank", "min_leaf": 5},
    "rank_m50": {"objective": "lambdarank", "min_leaf": 50},
    "rank_lr05": {"objective": "lambdarank", "learning_rate": 0.05},
    "rank_lr05_t200": {"objective": "lambdarank", "learning_rate": 0.05, "iterations": 200},
    "rank_t50": {"objective": "lambdarank", "iterations": 50},
    "rank_t300_lr03": {"objective": "lambdarank", "learning_rate": 0.03, "iterations": 300},
    "rank_cut3": {"objective": "lambdarank", "truncation": 3},
    "rank_cut10": {"objective": "lambdarank", "truncation": 10},
    "rank_l2_0": {"objective": "lambdarank", "l2": 0.0},
    "rank_lgbm": {"objective": "lambdarank", "leaves": 31, "l2": 0.0},  # LightGBM's defaults
    "rank_l31_lr05": {"objective": "lambdarank", "leaves": 31, "learning_rate": 0.05},
    "guard_rank_lr05": {"guard": True, "objective": "lambdarank", "learning_rate": 0.05},
    "guard_rank_l31": {"guard": True, "objective": "lambdarank", "leaves": 31},
    "guard_rank_lr05_t200": {
        "guard": True,
        "objective": "lambdarank",
        "learning_rate": 0.05,
        "iterations": 200,
    },
    "guard_rank_l31_lr05": {
        "guard": True,
        "objective": "lambdarank",
        "leaves": 31,
        "learning_rate": 0.05,
    },
    # the guard's designs tried (docs/ROUTING.md): blocks judged, each block's share, refit
    "guard_1x20": {"guard": True, "blocks": 1, "share": 0.2, "refit": False},
    "guard_1x20_refit": {"guard": True, "blocks": 1, "share": 0.2, "refit": True},
    "guard_2x20": {"guard": True, "blocks": 2, "share": 0.2, "refit": False},
    "guard_2x20_refit": {"guard": True, "blocks": 2, "share": 0.2, "refit": True},
    "guard_3x20_refit": {"guard": True, "blocks": 3, "share": 0.2, "refit": True},
    "guard_4x10_refit": {"guard": True, "blocks": 4, "share": 0.1, "refit": True},
    "guard_5x10": {"guard": True, "blocks": 5, "share": 0.1, "refit": False},
    "guard_5x10_refit": {"guard": True, "blocks": 5, "share": 0.1, "refit": True},
    "guard_6x10": {"guard": True, "blocks": 6, "share": 0.1, "refit": False},
    "guard_8x5_refit": {"guard": True, "blocks": 8, "share": 0.05, "refit": True},
}


@dataclass(frozen=True)
class Replay:
    """What one replay leaves: the index, the remembered steps and their vectors, the held
    out queries, their vectors, and which have a reported tool."""

    index: RouterIndex
    config: RouterConfig
    steps: list[RememberedStep]
    step_vectors: np.ndarray
    held: list[Query]
    vectors: list[np.ndarray]
    seen: list[bool]
    trust_keys: int


def _routing_digest() -> str:
    """A digest of app/routing's source."""
    folder = Path(RouterIndex.__module__.replace(".", "/")).parent
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for source in sorted((root / folder).glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def replay(
    data: Path, fraction: float, seed: int, poisoned: float, silent: float, cache: Path
) -> Replay:
    """The replay of ``data`` (kept in ``cache`` by its arguments, the ranking core's code
    (the index it holds is the code's, and one pickled by other code may not load) and what
    the replay reports: ``REPLAY_VERSION``)."""
    name = f"{data.resolve()}|{fraction}|{seed}|{poisoned}|{silent}|{_routing_digest()}"
    name += f"|replay {REPLAY_VERSION}"  # what the replay reports (eval_prior.py)
    path = cache / f"replay-{hashlib.sha256(name.encode()).hexdigest()[:16]}.pkl"
    if path.is_file():
        found: Replay = pickle.loads(path.read_bytes())
        return found
    settings = Settings()
    tools, queries = load_dataset(data, None)
    with throwaway_services(settings, None) as services:
        loaded = _load(services, tools, data / "tools.jsonl")
        playable = [Query(q.text, q.relevant & loaded) for q in queries if q.relevant & loaded]
        fed, held = split(playable, fraction, seed)
        quiet = unreported_tools(loaded, silent, seed)
        fed = [q for q in fed if not q.relevant & quiet]
        vectors = encode_queries(services.encoder, held)
        wrong = poison(fed, sorted(loaded), poisoned, seed)
        replay_feedback(services, fed, wrong)
        assert services.memory is not None
        services.memory.refresh()
        steps = services.memory.steps(NAMESPACE)
        with unit_of_work(services.session_factory) as session:
            step_vectors = text_vectors(session, services.encoder, [s.text for s in steps])
        snapshot = services.index.get(NAMESPACE)
        assert snapshot is not None
        reported = {n for i, q in enumerate(fed) if i not in wrong for n in q.relevant}
        made = Replay(
            snapshot.index,
            services.index.config,
            list(steps),
            np.asarray(step_vectors, dtype=np.float32),
            held,
            vectors,
            [bool(q.relevant & reported) for q in held],
            settings.trust_keys,
        )
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(made))
    return made


def scored(made: Replay, learned: Learned | None) -> dict[str, Any]:
    """hit@1 (all, seen, unseen) and the top candidate's calibration error."""
    router = Router(made.config)
    view = NamespaceView(made.index, learned=learned)
    hits, confidence = [], []
    for query, vector in zip(made.held, made.vectors, strict=True):
        answer = router.route(view, query.text, vector, RouteOptions(k=10))
        hits.append(bool(answer) and answer[0].name in query.relevant)
        confidence.append(answer[0].confidence if answer else 0.0)

    def part(pick: list[bool]) -> float | None:
        chosen = [h for h, p in zip(hits, pick, strict=True) if p]
        return round(sum(chosen) / len(chosen), 4) if chosen else None

    unseen = [not s for s in made.seen]
    one = [i for i, q in enumerate(made.held) if len(q.relevant) == 1]
    return {
        "all": part([True] * len(hits)),
        "seen": part(made.seen),
        "unseen": part(unseen),
        "ece": round(expected_calibration_error(confidence, hits), 4),
        "ece_one": round(
            expected_calibration_error([confidence[i] for i in one], [hits[i] for i in one]), 4
        ),
    }


def run(made: Replay, design: dict[str, Any]) -> tuple[dict[str, Any], Reranker | None]:
    """A design's scores on the held-out steps, and the reranker it trained (the guard's:
    None)."""
    began = time.perf_counter()
    fields = {k: v for k, v in design.items() if k in Trees.__dataclass_fields__}
    trees = Trees(**fields) if fields else DEFAULT_TREES  # a field named: from Trees()
    if design.get("guard"):
        learned, verdict = challenge(
            made.index,
            made.steps,
            made.step_vectors,
            made.trust_keys,
            made.config,
            None,
            trees,
            blocks=design.get("blocks"),
            refit=design.get("refit"),
            **({"share": design["share"]} if "share" in design else {}),
        )
        served = learned if verdict.promoted else None
        out = scored(made, served)
        summary = verdict.summary()
        return {
            **out,
            "promoted": verdict.promoted,
            "gain_lower": summary["gain_lower"],
            "held_gain": summary["gain"],
            "others": summary["other_keys"],
            "shared": summary["shared"],
            "ece_exam": [verdict.ece_before, verdict.ece_after],
            "delta": summary["delta"],
            "reason": verdict.reason,
            "seconds": round(time.perf_counter() - began, 1),
        }, None
    bank = bank_of(made.steps, made.step_vectors, made.trust_keys)
    depth = design.get("depth", 20)
    routed: dict[str, list[Candidate]] = {}
    ranker = train_reranker(
        made.index, made.config, bank, made.step_vectors, trees, depth, routed=routed
    )
    seconds = round(time.perf_counter() - began, 1)
    found = {**scored(made, Learned(ranker)), "delta": ranker.delta, "seconds": seconds}
    return {**found, **out_of_fold_hits(made, bank, trees, depth, routed)}, ranker


def out_of_fold_hits(
    made: Replay, bank: Bank, trees: Trees, depth: int, routed: dict[str, list[Candidate]]
) -> dict[str, Any]:
    """hit@1 of the training steps out of fold (the numbers a design may be tuned on: no
    held-out query is read): cold, and with the gate chosen on them."""
    rows = training_rows(made.index, made.config, bank, made.step_vectors, depth, routed=routed)
    if rows.steps < FOLDS:
        return {}
    chance = out_of_fold(rows, trees)
    delta, delta_cold = choose_delta(chance, rows)
    return {
        "oof_steps": rows.steps,
        "oof_cold": round(first_hits(chance, rows, 1.0, 1.0) / rows.steps, 4),
        "oof": round(first_hits(chance, rows, delta, delta_cold) / rows.steps, 4),
    }


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--fraction", type=float, default=0.5)
    cli.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    cli.add_argument("--poison", type=float, default=0.0, help="share of wrong reports")
    cli.add_argument("--unreported", type=float, default=0.0, help="share of tools never reported")
    cli.add_argument("--designs", nargs="*", default=["default", "guard"], choices=list(DESIGNS))
    cli.add_argument("--cache", type=Path, default=Path("/tmp/toolreach_replays"))
    cli.add_argument(
        "--save", type=Path, help="write each design's reranker here (DESIGN-seedN.npz)"
    )
    args = cli.parse_args(argv)
    rows = []
    for seed in args.seeds:
        made = replay(args.data, args.fraction, seed, args.poison, args.unreported, args.cache)
        cold = scored(made, None)
        base = {"seed": seed, "steps": len(made.steps), "held": len(made.held)}
        counts = {"n_seen": sum(made.seen), "n_unseen": len(made.seen) - sum(made.seen)}
        rows.append({**base, **counts, "design": "cold", **cold})
        print(json.dumps(rows[-1]), flush=True)
        for name in args.designs:
            found, ranker = run(made, DESIGNS[name])
            if args.save is not None and ranker is not None:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{name}-seed{seed}.npz").write_bytes(ranker.to_bytes())
            gain = {
                f"d_{g}": None
                if found[g] is None or cold[g] is None
                else round(found[g] - cold[g], 4)
                for g in ("seen", "unseen", "all")
            }
            rows.append({**base, "design": name, **found, **gain})
            print(json.dumps(rows[-1]), flush=True)
    for name in args.designs:
        mine = [r for r in rows if r["design"] == name]
        means = {
            g: round(float(np.mean([r[g] for r in mine if r[g] is not None])), 4)
            for g in ("d_seen", "d_unseen", "d_all", "ece")
            if any(r[g] is not None for r in mine)
        }
        print(json.dumps({"design": name, "mean_over_seeds": means}), flush=True)


if __name__ == "__main__":
    main()
