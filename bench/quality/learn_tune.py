"""Try adapter designs on one replay (docs/ROUTING.md, "Learning from reports").

One `toolreach eval --replay-feedback F` replay is built once; then each design — training
settings, the learned part's weight and pool, trained on the guard's older steps or all of
them — is trained on the remembered steps and scores the held-out queries (seen / unseen
hit@1) beside the pipeline without it.

    python -m bench.quality.learn_tune --data ../shared/data/metatool --fraction 0.5
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.cli.eval_prior import (
    _load,
    encode_queries,
    grouped,
    replay_feedback,
    score_queries,
    split,
)
from app.cli.evaluate import NAMESPACE, Query, load_dataset, load_queries, throwaway_services
from app.db import unit_of_work
from app.learning.guard import time_split
from app.learning.pairs import training_pairs
from app.routing.adapter import Learned, Training, train
from app.settings import Settings
from app.tools.examples import text_vectors
from bench.common import add_data, parser

DESIGNS: list[dict[str, Any]] = [
    {"name": "default"},
    {"name": "pull1e-2-w2", "pull": 1e-2, "weight": 2.0},
    {"name": "w1", "weight": 1.0},
    {"name": "w3", "weight": 3.0},
    {"name": "epochs60", "epochs": 60},
    {"name": "lr5e-3", "learning_rate": 5e-3},
    {"name": "pull1e-3", "pull": 1e-3},
    {"name": "temp0.1", "temperature": 0.1},
    {"name": "older-only", "older": True},
    {"name": "pull1e-4", "pull": 1e-4},
    {"name": "pull0", "pull": 0.0},
    {"name": "pull1e-3-w3", "pull": 1e-3, "weight": 3.0},
    {"name": "pull1e-3-w4", "pull": 1e-3, "weight": 4.0},
    {"name": "pull1e-3-e80", "pull": 1e-3, "epochs": 80},
    {"name": "pull1e-3-t0.02", "pull": 1e-3, "temperature": 0.02},
    {"name": "pull1e-3-pool10", "pull": 1e-3, "pool": 10},
    {"name": "pull1e-4-w3", "pull": 1e-4, "weight": 3.0},
    {"name": "pull1e-4-w3-e60", "pull": 1e-4, "weight": 3.0, "epochs": 60},
    {"name": "rel1", "pull": 1e-3, "weight": 1.0, "relative": True},
    {"name": "rel1.5", "pull": 1e-3, "weight": 1.5, "relative": True},
    {"name": "rel2", "pull": 1e-3, "weight": 2.0, "relative": True},
    {"name": "rel1-pull1e-4", "pull": 1e-4, "weight": 1.0, "relative": True},
    {"name": "ceiling", "fit_held": True},
    {"name": "memory0.6", "no_adapter": True, "memory_floor": 0.6},
    {"name": "memory0.5", "no_adapter": True, "memory_floor": 0.5},
    {"name": "pull1e-3-w3-mem0.6", "pull": 1e-3, "weight": 3.0, "memory_floor": 0.6},
    {"name": "pull1e-3-w3-mem0.7", "pull": 1e-3, "weight": 3.0, "memory_floor": 0.7},
]


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--fraction", type=float, default=0.5)
    cli.add_argument("--designs", nargs="*", help="names of DESIGNS to run (default all)")
    cli.add_argument("--json", action="store_true")
    cli.add_argument(
        "--reports",
        type=Path,
        help="replay this queries file's queries (a --fraction share, minus any of the held-out "
        "texts) as the reports, and hold out the dataset's whole queries.jsonl",
    )
    args = cli.parse_args(argv)
    settings = Settings()
    tools, queries = load_dataset(args.data, None)
    out = []
    with throwaway_services(settings, None) as services:
        loaded = _load(services, tools, args.data / "tools.jsonl")
        playable = [Query(q.text, q.relevant & loaded) for q in queries if q.relevant & loaded]
        if args.reports:
            held = playable
            texts = {q.text for q in held}
            extra = [
                Query(q.text, q.relevant & loaded)
                for q in load_queries(args.reports, tools)
                if q.text not in texts and q.relevant & loaded
            ]
            fed = split(extra, args.fraction, 0)[0]
        else:
            fed, held = split(playable, args.fraction, 0)
        vectors = encode_queries(services.encoder, held)
        replay_feedback(services, fed)
        services.prior.refresh()
        assert services.memory is not None
        services.memory.refresh()
        reported = {n for q in fed for n in q.relevant}
        seen = [bool(q.relevant & reported) for q in held]
        index = services.index.get(NAMESPACE).index  # type: ignore[union-attr]
        steps = services.memory.steps(NAMESPACE)
        with unit_of_work(services.session_factory) as session:
            step_vectors = text_vectors(session, services.encoder, [s.text for s in steps])
        base = grouped(score_queries(services, held, vectors, None), seen)
        out.append({"design": "none", **summary(base)})
        print(json.dumps(out[-1]), flush=True)
        for design in DESIGNS:
            if args.designs and design["name"] not in args.designs:
                continue
            use = list(range(len(steps)))
            if design.get("older"):
                use = time_split(steps)[0]
            if design.get("fit_held"):  # not a design: the held-out queries are fitted too
                held_rows = np.asarray([v[0] for v in vectors], dtype=np.float32)
                from app.routing.adapter import Pairs
                from app.routing.adapter import joined as join

                labels = np.array([index.positions[sorted(q.relevant)[0]] for q in held])
                base_pairs, reported_tools = training_pairs(
                    index, [steps[i] for i in use], step_vectors[use], settings.trust_keys
                )
                pairs = join(
                    base_pairs,
                    Pairs(
                        held_rows / np.linalg.norm(held_rows, axis=1, keepdims=True),
                        labels,
                        np.full(len(held), 1 / 3, np.float32),
                    ),
                )
                reported_tools = reported_tools | {sorted(q.relevant)[0] for q in held}
            else:
                pairs, reported_tools = training_pairs(
                    index, [steps[i] for i in use], step_vectors[use], settings.trust_keys
                )
            fields = {f.name for f in dataclasses.fields(Training)}
            training = Training(**{k: v for k, v in design.items() if k in fields})
            began = time.perf_counter()
            adapter = train(pairs, index.embeddings, sorted(reported_tools), training)
            seconds = time.perf_counter() - began
            learned: Learned | None = Learned(
                adapter, weight=design.get("weight", 3.0), pool=design.get("pool", 50)
            )
            memory = None
            config = services.index.config
            if "memory_floor" in design:
                memory = services.memory.get(NAMESPACE)
                config = dataclasses.replace(config, memory_floor=design["memory_floor"])
            if design.get("no_adapter"):
                learned = None
            rows = score_queries(services, held, vectors, None, memory, learned, config=config)
            out.append(
                {
                    "design": design["name"],
                    "train_s": round(seconds, 1),
                    **summary(grouped(rows, seen)),
                }
            )
            print(json.dumps(out[-1]), flush=True)


def summary(groups: dict[str, Any]) -> dict[str, Any]:
    return {g: groups[g]["hit@1"] for g in ("all", "seen", "unseen")} | {
        "n_seen": groups["seen"]["queries"],
        "n_unseen": groups["unseen"]["queries"],
    }


if __name__ == "__main__":
    main()
