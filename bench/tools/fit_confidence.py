"""Fit the confidence model (app/routing/confidence.py) on the tuning splits; write its constants.

Tuning splits only: MetaTool ``queries_all.jsonl`` less the ``queries.jsonl`` sample, and
Seal-Tools ``dev-*``. The held-out parts are measured by ``toolreach eval`` afterwards.

1. Each dataset's tools become cards as ``toolreach eval`` makes them (``parse_batch``,
   ``card_to_doc``), embedded by the service's encoder (vectors cached under ``--cache``).
2. Namespaces of several sizes: the whole tool set, and random subsets (a few queries'
   labelled tools plus random others, ``RouterIndex.without``) so that the namespace size is
   learnt within a dataset, not as a stand-in for which dataset it is. Every tuning query
   whose labelled tools are all in a namespace is routed there (k = 3, the full pipeline).
3. Each of the top 3 candidates is an example: its ``Evidence``, and whether it is a labelled
   tool. Each dataset weighs the same, and within it each namespace size.
4. A logistic regression on the standardised features (Newton's method, a little L2), the
   coefficients of evidence features (``confidence.MONOTONE``) kept ≥ 0 by an active set:
   more evidence never lowers the confidence.
5. The recommended ``min_confidence``: on the tuning queries of the whole tool sets and the
   same queries with their labelled tools left out (the no-fit test of ``toolreach eval``),
   the threshold with the largest Youden's J (no-fit share emptied − in-scope share
   emptied), averaged over the two datasets.

    python -m bench.tools.fit_confidence --metatool /work/shared/data/metatool \\
        --seal /work/shared/data/seal-tools --write app/routing/confidence_fit.py
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.cli.evaluate import safe_name
from app.cli.no_fit import auroc, expected_calibration_error
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    embedding_text,
)
from app.routing.confidence import (
    FEATURES,
    MONOTONE,
    ConfidenceModel,
    Evidence,
    Logistic,
    Shape,
    pieces,
)
from app.services import build_encoder
from app.settings import Settings
from app.tools.catalog import card_to_doc, parse_batch
from bench.common import add_cache, cached_encode, parser, read_jsonl, step_rows

K = 3
SEED = 17
DEFAULT_FEATURES = tuple(FEATURES)
L2 = 1e-3
MAX_RIGHT_EMPTIED = 0.05
SHOWN = 8  # no-fit steps printed, the most confident first
LINEAR = frozenset({"log_tools", "log_parts", "penalty"})  # no knots: see shape_columns


@dataclass(frozen=True)
class Plan:
    """How many examples a dataset gives: namespace sizes besides the whole tool set, the
    in-scope queries each size gets, those routed in one sampled namespace at most, and the
    tuning queries asked again without their tools."""

    sizes: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: {"metatool": (10, 30, 100), "seal-tools": (10, 30, 100, 300, 1000)}
    )
    per_size: int = 1500
    per_namespace: int = 40
    no_fit: int = 1000


def feature_rows(evidence: Sequence[Evidence], features: Sequence[str]) -> list[list[float]]:
    """The named features of each evidence, one row each."""
    return [[FEATURES[name](e) for name in features] for e in evidence]


@dataclass
class Dataset:
    name: str
    index: RouterIndex
    queries: list[tuple[str, frozenset[str], np.ndarray]]


@dataclass
class Examples:
    """One row per routed candidate: evidence, label, weight group, and which query."""

    evidence: list[Evidence] = field(default_factory=list)
    label: list[bool] = field(default_factory=list)
    group: list[str] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)

    def add(self, answer: Sequence[Any], relevant: frozenset[str], group: str) -> None:
        for rank, c in enumerate(answer):
            self.evidence.append(c.evidence)
            self.label.append(c.name in relevant)
            self.group.append(group)
            self.rank.append(rank)


def tuning_queries(data: Path) -> list[dict[str, Any]]:
    """MetaTool: queries_all less queries.jsonl; Seal-Tools: the dev- ids."""
    if (data / "queries_all.jsonl").exists():
        held_out = {row["query"] for row in read_jsonl(data / "queries.jsonl")}
        return [r for r in read_jsonl(data / "queries_all.jsonl") if r["query"] not in held_out]
    return [r for r in read_jsonl(data / "queries.jsonl") if str(r["id"]).startswith("dev-")]


def load(name: str, data: Path, encoder: Any, config: RouterConfig, cache: Path) -> Dataset:
    """The tools as `toolreach eval` registers them, and the tuning queries with vectors."""
    tools = [{**t, "name": safe_name(t["name"])} for t in read_jsonl(data / "tools.jsonl")]
    cards = parse_batch(tools, "fit").cards
    docs = [card_to_doc(c) for c in sorted(cards, key=lambda c: c.name)]
    vectors = cached_encode(encoder, [embedding_text(d) for d in docs], cache)
    index = RouterIndex.build(docs, vectors, config)
    rows = tuning_queries(data)
    known = set(index.names)
    rows = [r for r in rows if {safe_name(n) for n in r["relevant"]} <= known]
    texts = [r["query"] for r in rows]
    qvecs = step_rows(lambda batch: cached_encode(encoder, batch, cache), texts)
    queries = [
        (r["query"], frozenset(safe_name(n) for n in r["relevant"]), v)
        for r, v in zip(rows, qvecs, strict=True)
    ]
    return Dataset(name, index, queries)


def sampled_namespaces(
    ds: Dataset, size: int, rng: random.Random, plan: Plan
) -> Iterator[tuple[RouterIndex, list[int]]]:
    """Namespaces of ``size`` tools — a few queries' labelled tools, then random others —
    each with the tuning queries (at most ``plan.per_namespace``) whose tools are all in it."""
    order = list(range(len(ds.queries)))
    names = list(ds.index.names)
    routed = 0
    while routed < plan.per_size:
        rng.shuffle(order)
        chosen: set[str] = set()
        for q in order:
            relevant = ds.queries[q][1]
            if len(chosen | relevant) <= size // 2:
                chosen |= relevant
            if len(chosen) >= size // 2:
                break
        while len(chosen) < size:
            chosen.add(rng.choice(names))
        inside = [q for q in order if ds.queries[q][1] <= chosen][: plan.per_namespace]
        if not inside:
            continue
        routed += len(inside)
        yield ds.index.without(set(names) - chosen), inside


def collect(ds: Dataset, config: RouterConfig, rng: random.Random, plan: Plan) -> Examples:
    """The training examples of one dataset: every namespace size, in-scope queries."""
    out = Examples()
    router, options, whole = Router(config), RouteOptions(k=K), NamespaceView(ds.index)
    for text, relevant, vec in ds.queries:
        out.add(router.route(whole, text, vec, options), relevant, f"{ds.name}/all")
    for size in plan.sizes[ds.name]:
        for index, inside in sampled_namespaces(ds, size, rng, plan):
            view = NamespaceView(index)
            for q in inside:
                text, relevant, vec = ds.queries[q]
                answer = router.route(view, text, vec, options)
                out.add(answer, relevant, f"{ds.name}/{size}")
    return out


@dataclass(frozen=True)
class NoFit:
    """A tuning query asked without its labelled tools, and the top candidate it got."""

    text: str
    removed: frozenset[str]
    top: str
    evidence: Evidence


def no_fit_tops(ds: Dataset, config: RouterConfig, rng: random.Random, plan: Plan) -> list[NoFit]:
    """The top candidates of ``plan.no_fit`` tuning queries asked without their tools."""
    picked = rng.sample(range(len(ds.queries)), min(plan.no_fit, len(ds.queries)))
    by_labels: dict[frozenset[str], list[int]] = defaultdict(list)
    for q in picked:
        by_labels[ds.queries[q][1]].append(q)
    tops = []
    router, options = Router(config), RouteOptions(k=1)
    for relevant, members in by_labels.items():
        smaller = NamespaceView(ds.index.without(relevant))
        for q in members:
            text, _, vec = ds.queries[q]
            for c in router.route(smaller, text, vec, options):
                tops.append(NoFit(text, relevant, c.name, c.evidence))
    return tops


def most_confident(model: ConfidenceModel, tops: list[NoFit], n: int = SHOWN) -> list[str]:
    """The ``n`` no-fit steps given the highest confidence, one line each."""
    ranked = sorted(tops, key=lambda t: -model.confidence(t.evidence))[:n]
    return [
        f"  {model.confidence(t.evidence):.3f} {t.top} for {t.text[:100]!r} "
        f"(left out: {', '.join(sorted(t.removed))})"
        for t in ranked
    ]


def fit_logistic(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, monotone: np.ndarray, l2: float = L2
) -> tuple[np.ndarray, float]:
    """Weighted L2 logistic regression by Newton's method; coefficients flagged in
    ``monotone`` are kept ≥ 0 (active set: a negative one is fixed at 0 and the rest refit,
    and a fixed one is freed again when its gradient wants it positive)."""
    n, d = x.shape
    fixed = np.zeros(d, dtype=bool)
    w = w / w.sum()
    while True:
        free = ~fixed
        design = np.hstack([np.ones((n, 1)), x[:, free]])
        beta = np.zeros(design.shape[1])
        for _ in range(100):
            p = 1 / (1 + np.exp(-design @ beta))
            grad = design.T @ (w * (p - y)) + l2 * np.r_[0.0, beta[1:]]
            hess = (design * (w * p * (1 - p))[:, None]).T @ design + l2 * np.diag(
                np.r_[0.0, np.ones(design.shape[1] - 1)]
            )
            step = np.linalg.solve(hess, grad)
            beta -= step
            if np.abs(step).max() < 1e-10:
                break
        coef = np.zeros(d)
        coef[free] = beta[1:]
        negative = monotone & free & (coef < 0)
        if negative.any():
            fixed[np.argmin(np.where(negative, coef, np.inf))] = True
            continue
        p = 1 / (1 + np.exp(-(beta[0] + x @ coef)))
        pull = x.T @ (w * (y - p))  # > 0: the loss falls if the coefficient grows
        freed = fixed & (pull > 1e-9)
        if not freed.any():
            return coef, float(beta[0])
        fixed[np.argmax(np.where(freed, pull, -np.inf))] = False


def shape_columns(
    values: np.ndarray, feature: str
) -> tuple[float, float, tuple[float, ...], np.ndarray] | None:
    """A feature's range (its 0.5th to 99.5th percentile), knots (quartiles; none for the
    namespace size and the number of parts, which enter linearly so that a knot cannot stand
    for one dataset's size) and piece columns; ``None`` for a constant feature."""
    low, high = (float(v) for v in np.quantile(values, [0.005, 0.995]))
    if high - low < 1e-9:
        return None
    knots: tuple[float, ...] = ()
    if feature not in LINEAR:
        inner = np.unique(np.round(np.quantile(values, [0.25, 0.5, 0.75]), 6))
        knots = tuple(float(k) for k in inner if low + 1e-6 < k < high - 1e-6)
    return low, high, knots, np.asarray(pieces(values.tolist(), low, high, knots))


def fit_role(x: np.ndarray, y: np.ndarray, w: np.ndarray, features: Sequence[str]) -> Logistic:
    """One role's logistic model over the features' monotone piecewise-linear shapes."""
    columns, monotone, layout = [], [], []
    for j, feature in enumerate(features):
        if any(np.array_equal(x[:, j], x[:, i]) for i in range(j)):
            continue  # the same as an earlier one here (a leader's gap is its lead)
        found = shape_columns(x[:, j], feature)
        if found is None:
            continue
        low, high, knots, cols = found
        columns.append(cols)
        monotone += [feature in MONOTONE] * cols.shape[1]
        layout.append((feature, low, high, knots, cols.shape[1]))
    design = np.hstack(columns)
    mean, scale = design.mean(axis=0), design.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    coef, intercept = fit_logistic((design - mean) / scale, y, w, np.asarray(monotone))
    slopes = coef / scale  # back to the features' own units
    intercept -= float((coef * mean / scale).sum())
    shapes, at = [], 0
    for feature, low, high, knots, width in layout:
        part = tuple(round(float(v), 6) for v in slopes[at : at + width])
        at += width
        if any(part):
            shapes.append(Shape(feature, round(low, 6), round(high, 6), knots, part))
    return Logistic(round(intercept, 6), tuple(shapes))


def fit(examples: Examples, features: Sequence[str], encoder: str) -> ConfidenceModel:
    """The confidence model fit on ``examples``: the leaders' (``lead ≥ 0``) and the others'
    (weights: equal per dataset, then per namespace size)."""
    x = np.asarray(feature_rows(examples.evidence, features), dtype=np.float64)
    y = np.asarray(examples.label, dtype=np.float64)
    leader = np.asarray([e.lead >= 0 for e in examples.evidence])
    groups = np.asarray(examples.group)
    names = np.unique(groups)
    datasets = {g.split("/")[0] for g in names}
    roles = []
    for role in (leader, ~leader):
        weight = np.zeros(len(y))
        for g in names:
            siblings = [h for h in names if h.split("/")[0] == g.split("/")[0]]
            mine = role & (groups == g)
            weight[mine] = 1.0 / (len(datasets) * len(siblings) * max(mine.sum(), 1))
        roles.append(fit_role(x[role], y[role], weight[role], features))
    return ConfidenceModel(roles[0], roles[1], encoder)


def recommended_threshold(right: dict[str, np.ndarray], no_fit: dict[str, np.ndarray]) -> float:
    """The highest min_confidence (0.01 steps) that, on every tuning set, empties at most
    ``MAX_RIGHT_EMPTIED`` of the queries whose top candidate is right: a safety net that
    rarely takes a right answer away (what it empties of the no-fit queries is reported)."""
    best = 0.0
    for t in np.round(np.arange(0.01, 1.0, 0.01), 2):
        if all(np.mean(np.asarray(right[d]) < t) <= MAX_RIGHT_EMPTIED for d in right):
            best = float(t)
    return best


def report(
    model: ConfidenceModel, examples: Examples, nofit: dict[str, list[Evidence]]
) -> tuple[dict[str, Any], float]:
    """On the tuning sets: ECE per group (top candidates, and all three shown), AUROC against
    the no-fit queries, the recommended threshold and what it empties."""
    conf = np.asarray([model.confidence(e) for e in examples.evidence])
    label = np.asarray(examples.label)
    groups = np.asarray(examples.group)
    top = np.asarray(examples.rank) == 0
    out: dict[str, Any] = {"ece_top": {}, "ece_top3": {}, "auroc": {}}
    for g in sorted(set(examples.group)):
        mine = groups == g
        top_ece = expected_calibration_error(conf[mine & top], label[mine & top])
        out["ece_top"][g] = round(top_ece, 4)
        out["ece_top3"][g] = round(expected_calibration_error(conf[mine], label[mine]), 4)
    tops, right, empty = {}, {}, {}
    for name, evidence in nofit.items():
        mine = (groups == f"{name}/all") & top
        tops[name], right[name] = conf[mine], conf[mine & label]
        empty[name] = np.asarray([model.confidence(e) for e in evidence])
        out["auroc"][name] = round(auroc(tops[name].tolist(), empty[name].tolist()), 4)
    threshold = recommended_threshold(right, empty)
    out["min_confidence"] = threshold
    out["emptied"] = {}
    for t in sorted({0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, threshold}):
        out["emptied"][str(t)] = {
            n: {
                "no_fit": round(float(np.mean(empty[n] < t)), 4),
                "in_scope": round(float(np.mean(tops[n] < t)), 4),
                "right_top": round(float(np.mean(right[n] < t)), 4),
            }
            for n in nofit
        }
    return out, threshold


def write_model(path: Path, model: ConfidenceModel, threshold: float, command: str) -> None:
    """``app/routing/confidence_fit.py``: the constants, with the command that made them
    (then formatted by ruff, which sits beside this Python)."""

    def logistic(role: Logistic) -> str:
        shapes = "".join(
            f"            Shape({s.feature!r}, {s.low!r}, {s.high!r}, {s.knots!r}, {s.slopes!r}),\n"
            for s in role.shapes
        )
        head = f"Logistic(\n        intercept={role.intercept!r},\n"
        return f"{head}        shapes=(\n{shapes}        ),\n    )"

    path.write_text(
        f'''r"""The fitted confidence model: written by ``bench.tools.fit_confidence``, not by hand.

Reproduce, from the repository root::

    {command}
"""

from app.routing.confidence import ConfidenceModel, Logistic, Shape

CONFIDENCE_MODEL = ConfidenceModel(
    leader={logistic(model.leader)},
    others={logistic(model.others)},
    encoder={model.encoder!r},
)
# The min_confidence picked on the tuning splits (docs/ROUTING.md, "Confidence").
RECOMMENDED_MIN_CONFIDENCE = {threshold!r}
''',
        encoding="utf-8",
    )
    subprocess.run([Path(sys.executable).parent / "ruff", "format", "-q", path], check=False)


@dataclass
class Fitted:
    """A fit's model and recommended threshold, its report, and the no-fit tops it read."""

    model: ConfidenceModel
    threshold: float
    summary: dict[str, Any]
    nofit: dict[str, list[NoFit]]


def fit_sets(
    sets: Mapping[str, Path],
    encoder: Any,
    config: RouterConfig,
    cache: Path,
    features: Sequence[str] = DEFAULT_FEATURES,
    plan: Plan | None = None,
) -> Fitted:
    """The confidence model fit on the tuning splits of ``sets`` (name → dataset folder)."""
    plan = plan or Plan()
    examples = Examples()
    nofit: dict[str, list[NoFit]] = {}
    for name, data in sets.items():
        ds = load(name, data, encoder, config, cache)
        rng = random.Random(SEED)
        part = collect(ds, config, rng, plan)
        for attr in ("evidence", "label", "group", "rank"):
            getattr(examples, attr).extend(getattr(part, attr))
        nofit[name] = no_fit_tops(ds, config, rng, plan)
        print(f"{name}: {len(ds.queries)} tuning queries, {len(part.label)} examples", flush=True)
    model = fit(examples, features, encoder.name)
    evidence = {n: [t.evidence for t in v] for n, v in nofit.items()}
    summary, threshold = report(model, examples, evidence)
    return Fitted(model, threshold, summary, nofit)


def main(argv: Sequence[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    started = time.perf_counter()
    settings = Settings()
    features = tuple(args.features.split(","))
    sets = {"metatool": args.metatool, "seal-tools": args.seal}
    fitted = fit_sets(sets, build_encoder(settings), settings.router, args.cache, features)
    print(json.dumps(fitted.summary, indent=2))
    for name, tops in fitted.nofit.items():
        print(f"{name}: the no-fit steps given the highest confidence")
        print("\n".join(most_confident(fitted.model, tops)))
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.write:
        chosen = "" if features == DEFAULT_FEATURES else f" --features {args.features}"
        command = (
            f"python -m bench.tools.fit_confidence --metatool {args.metatool} \\\n"
            f"        --seal {args.seal}{chosen} --write {args.write}"
        )
        write_model(args.write, fitted.model, fitted.threshold, command)


def arguments() -> argparse.ArgumentParser:
    cli = parser(__doc__)
    cli.add_argument("--metatool", type=Path, required=True)
    cli.add_argument("--seal", type=Path, required=True)
    add_cache(cli)
    cli.add_argument("--features", default=",".join(DEFAULT_FEATURES))
    cli.add_argument("--write", type=Path, help="write the constants to this file")
    return cli


if __name__ == "__main__":
    main()
