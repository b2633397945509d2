"""What the confidence costs a route: ``Router.route`` with it, and with its evidence and model
stubbed out, one query after the other (each timed ``--repeat`` times, the fastest kept, so
that other jobs on a shared machine count as little as they can; which goes first alternates).

    python -m bench.perf.confidence_cost --data /work/shared/data/seal-tools --name seal-tools
    python -m bench.perf.confidence_cost --data /work/shared/data/metatool --name metatool
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import app.routing.candidates as answer
from app.routing import NamespaceView, RouteOptions, Router
from app.routing.candidates import ConfidenceBasis
from app.routing.confidence import ConfidenceModel, Evidence, Logistic
from app.routing.confidence_fit import CONFIDENCE_MODEL
from app.routing.scores import Scores
from app.services import build_encoder
from app.settings import Settings
from bench.common import add_cache, add_data, parser
from bench.tools.fit_confidence import load

STUB = Evidence(0.5, 0.5, 1.0, 0.5, 1.0, 0.5, 0.5, 100, 1, 0.0)


class NoModel(ConfidenceModel):
    """A model that reads nothing."""

    def confidence(self, evidence: Evidence) -> float:
        return 0.5

    def confidences(self, evidence: Sequence[Evidence]) -> list[float]:
        return [0.5] * len(evidence)


NO_MODEL = NoModel(Logistic(0.0, ()), Logistic(0.0, ()), "none")


def no_evidence(
    scores: Scores, basis: ConfidenceBasis, positions: np.ndarray, pen: np.ndarray
) -> list[Evidence]:
    return [STUB] * len(positions)


def confidences(model: Any, evidence: list[Evidence]) -> list[float]:
    return [model.confidence(e) for e in evidence]


def fastest(call: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--name", choices=["metatool", "seal-tools"], required=True)
    cli.add_argument("--queries", type=int, default=300)
    cli.add_argument("--k", type=int, default=3)
    cli.add_argument("--repeat", type=int, default=5)
    add_cache(cli)
    args = cli.parse_args(argv)
    settings = Settings()
    config = settings.router
    ds = load(args.name, args.data, build_encoder(settings), config, args.cache)
    real = answer.evidence
    view, options = NamespaceView(ds.index), RouteOptions(k=args.k)
    routers = {False: Router(config), True: Router(config, confidence=NO_MODEL)}
    with_it: list[float] = []
    without: list[float] = []
    for i, (text, _, vec) in enumerate(ds.queries[: args.queries]):
        for stubbed in (False, True) if i % 2 else (True, False):  # neither always first
            answer.evidence = no_evidence if stubbed else real
            call = partial(routers[stubbed].route, view, text, vec, options)
            (without if stubbed else with_it).append(fastest(call, args.repeat))
        answer.evidence = real
    a, b = np.asarray(with_it) * 1e6, np.asarray(without) * 1e6
    print(
        f"{args.name}: {len(ds.index)} tools, {len(a)} queries, k={args.k}: route p50 "
        f"{np.median(a):.0f} µs with the confidence, {np.median(b):.0f} µs without; "
        f"the difference p50 {np.median(a - b):.0f} µs, p90 {np.percentile(a - b, 90):.0f} µs"
    )
    seen: list[tuple[Scores, ConfidenceBasis, np.ndarray, np.ndarray]] = []
    model = CONFIDENCE_MODEL

    def recorded(
        scores: Scores, basis: ConfidenceBasis, positions: np.ndarray, pen: np.ndarray
    ) -> list[Evidence]:
        seen.append((scores, basis, positions, pen))
        return real(scores, basis, positions, pen)

    answer.evidence = recorded
    for text, _, vec in ds.queries[: args.queries]:
        routers[False].route(view, text, vec, options)
    answer.evidence = real
    read = [fastest(partial(real, *given), args.repeat) * 1e6 for given in seen]
    answers = [real(*given) for given in seen]
    scored = [fastest(partial(confidences, model, e), args.repeat) * 1e6 for e in answers]
    unit = fastest(partial(sum, range(100)), 1000) * 1e6
    print(
        f"  per answer, p50: the evidence {np.median(read):.0f} µs, the model "
        f"{np.median(scored):.0f} µs (here sum(range(100)) takes {unit:.2f} µs)"
    )


if __name__ == "__main__":
    main()
