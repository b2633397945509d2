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

    python bench/fit_confidence.py --metatool /work/shared/data/metatool \\
        --seal /work/shared/data/seal-tools --write app/routing/confidence_fit.py
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune_routing import cached_encode, query_vectors

from app.cli.evaluate import safe_name
from app.cli.no_fit import auroc, expected_calibration_error
from app.routing import RouterConfig, RouterIndex, embedding_text, route
from app.routing.confidence import (
    FEATURES,
    MONOTONE,
    ConfidenceModel,
    Evidence,
    feature_rows,
)
from app.routing.index import doc_tokens
from app.services import build_encoder
from app.settings import Settings
from app.tools.catalog import card_to_doc, parse_batch

K = 3
SEED = 17
DEFAULT_FEATURES = tuple(FEATURES)
# Namespace sizes besides the whole tool set, and how many in-scope queries each size gets.
SIZES = {"metatool": (10, 30, 100), "seal-tools": (10, 30, 100, 300, 1000)}
PER_SIZE = 1500
PER_NAMESPACE = 40  # in-scope queries routed in one sampled namespace at most
NO_FIT = 1000  # tuning queries asked again without their tools, per dataset
L2 = 1e-3


@dataclass
class Dataset:
    name: str
    index: RouterIndex
    corpus: list[list[str]]
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


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


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
    qvecs = query_vectors(encoder, [r["query"] for r in rows], cache)
    queries = [
        (r["query"], frozenset(safe_name(n) for n in r["relevant"]), v)
        for r, v in zip(rows, qvecs, strict=True)
    ]
    corpus = [doc_tokens(d, config.fields) for d in docs]
    return Dataset(name, index, corpus, queries)


def sampled_namespaces(
    ds: Dataset, size: int, rng: random.Random
) -> Iterator[tuple[RouterIndex, list[int]]]:
    """Namespaces of ``size`` tools — a few queries' labelled tools, then random others —
    each with the tuning queries (at most ``PER_NAMESPACE``) whose tools are all in it."""
    order = list(range(len(ds.queries)))
    names = list(ds.index.names)
    routed = 0
    while routed < PER_SIZE:
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
        inside = [q for q in order if ds.queries[q][1] <= chosen][:PER_NAMESPACE]
        if not inside:
            continue
        routed += len(inside)
        yield ds.index.without(set(names) - chosen, ds.corpus), inside


def collect(ds: Dataset, config: RouterConfig, rng: random.Random) -> Examples:
    """The training examples of one dataset: every namespace size, in-scope queries."""
    out = Examples()
    for text, relevant, vec in ds.queries:
        out.add(route(ds.index, text, vec, k=K, config=config), relevant, f"{ds.name}/all")
    for size in SIZES[ds.name]:
        for index, inside in sampled_namespaces(ds, size, rng):
            for q in inside:
                text, relevant, vec = ds.queries[q]
                answer = route(index, text, vec, k=K, config=config)
                out.add(answer, relevant, f"{ds.name}/{size}")
    return out


def no_fit_tops(ds: Dataset, config: RouterConfig, rng: random.Random) -> list[Evidence]:
    """The top candidate's evidence for ``NO_FIT`` tuning queries asked without their tools."""
    picked = rng.sample(range(len(ds.queries)), min(NO_FIT, len(ds.queries)))
    by_labels: dict[frozenset[str], list[int]] = defaultdict(list)
    for q in picked:
        by_labels[ds.queries[q][1]].append(q)
    tops = []
    for relevant, members in by_labels.items():
        smaller = ds.index.without(relevant, ds.corpus)
        for q in members:
            text, _, vec = ds.queries[q]
            tops.extend(c.evidence for c in route(smaller, text, vec, k=1, config=config))
    return tops


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


def fit(examples: Examples, features: Sequence[str], encoder: str) -> ConfidenceModel:
    """The confidence model fit on ``examples`` (weights: equal per dataset, then per group)."""
    x = np.asarray(feature_rows(examples.evidence, features), dtype=np.float64)
    y = np.asarray(examples.label, dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    groups = np.asarray(examples.group)
    weight = np.zeros(len(y))
    datasets = sorted({g.split("/")[0] for g in groups})
    for g in np.unique(groups):
        siblings = {h for h in np.unique(groups) if h.split("/")[0] == g.split("/")[0]}
        weight[groups == g] = 1.0 / (len(datasets) * len(siblings) * (groups == g).sum())
    monotone = np.asarray([f in MONOTONE for f in features])
    coef, intercept = fit_logistic((x - mean) / scale, y, weight, monotone)
    return ConfidenceModel(
        features=tuple(features),
        mean=tuple(round(float(v), 6) for v in mean),
        scale=tuple(round(float(v), 6) for v in scale),
        weights=tuple(round(float(v), 6) for v in coef),
        intercept=round(intercept, 6),
        encoder=encoder,
    )


def youden_threshold(in_scope: dict[str, list[float]], no_fit: dict[str, list[float]]) -> float:
    """The min_confidence (0.01 steps) with the largest no-fit share emptied minus in-scope
    share emptied, averaged over the datasets."""
    best, best_j = 0.5, -1.0
    for t in np.round(np.arange(0.01, 1.0, 0.01), 2):
        j = np.mean(
            [
                np.mean(np.asarray(no_fit[d]) < t) - np.mean(np.asarray(in_scope[d]) < t)
                for d in in_scope
            ]
        )
        if j > best_j + 1e-12:
            best, best_j = float(t), float(j)
    return best


def report(
    model: ConfidenceModel, examples: Examples, nofit: dict[str, list[Evidence]]
) -> tuple[dict[str, Any], float]:
    """Tuning-set ECE per group (top candidates), AUROC, and the chosen threshold."""
    conf = np.asarray([model.confidence(e) for e in examples.evidence])
    label = np.asarray(examples.label)
    groups = np.asarray(examples.group)
    top = np.asarray(examples.rank) == 0
    out: dict[str, Any] = {"ece_top": {}, "ece_top3": {}, "auroc": {}}
    tops: dict[str, list[float]] = {}
    for g in sorted(set(examples.group)):
        mine = groups == g
        out["ece_top"][g] = round(
            expected_calibration_error(conf[mine & top], label[mine & top]), 4
        )
        out["ece_top3"][g] = round(expected_calibration_error(conf[mine], label[mine]), 4)
    for name, evidence in nofit.items():
        tops[name] = conf[(groups == f"{name}/all") & top].tolist()
        out["auroc"][name] = round(auroc(tops[name], [model.confidence(e) for e in evidence]), 4)
    nofit_conf = {n: [model.confidence(e) for e in ev] for n, ev in nofit.items()}
    threshold = youden_threshold(tops, nofit_conf)
    out["min_confidence"] = threshold
    out["emptied"] = {
        n: {
            "no_fit": round(float(np.mean(np.asarray(nofit_conf[n]) < threshold)), 4),
            "in_scope": round(float(np.mean(np.asarray(tops[n]) < threshold)), 4),
        }
        for n in nofit
    }
    return out, threshold


def write_model(path: Path, model: ConfidenceModel, threshold: float, command: str) -> None:
    """``app/routing/confidence_fit.py``: the constants, with the command that made them."""

    def floats(values: Sequence[float]) -> str:
        return "(" + ", ".join(repr(v) for v in values) + ",)"

    path.write_text(
        f'''"""The fitted confidence model: written by ``bench/fit_confidence.py``, not by hand.

Reproduce: ``{command}``
"""

from app.routing.confidence import ConfidenceModel

CONFIDENCE_MODEL = ConfidenceModel(
    features={tuple(model.features)!r},
    mean={floats(model.mean)},
    scale={floats(model.scale)},
    weights={floats(model.weights)},
    intercept={model.intercept!r},
    encoder={model.encoder!r},
)
# The min_confidence with the largest Youden's J on the tuning splits (docs/ROUTING.md).
RECOMMENDED_MIN_CONFIDENCE = {threshold!r}
''',
        encoding="utf-8",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", type=Path, required=True)
    parser.add_argument("--seal", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/toolreach_emb"))
    parser.add_argument("--features", default=",".join(DEFAULT_FEATURES))
    parser.add_argument("--write", type=Path, help="write the constants to this file")
    args = parser.parse_args()
    started = time.perf_counter()
    settings = Settings()
    encoder = build_encoder(settings)
    config = settings.router
    features = tuple(args.features.split(","))
    examples = Examples()
    nofit: dict[str, list[Evidence]] = {}
    for name, data in (("metatool", args.metatool), ("seal-tools", args.seal)):
        ds = load(name, data, encoder, config, args.cache)
        rng = random.Random(SEED)
        part = collect(ds, config, rng)
        for attr in ("evidence", "label", "group", "rank"):
            getattr(examples, attr).extend(getattr(part, attr))
        nofit[name] = no_fit_tops(ds, config, rng)
        print(f"{name}: {len(ds.queries)} tuning queries, {len(part.label)} examples", flush=True)
    model = fit(examples, features, encoder.name)
    summary, threshold = report(model, examples, nofit)
    print(json.dumps({"model": model.__dict__, **summary}, indent=2, default=list))
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.write:
        command = (
            f"python bench/fit_confidence.py --metatool {args.metatool} --seal {args.seal}"
            + (
                f" --features {args.features}"
                if args.features != ",".join(DEFAULT_FEATURES)
                else ""
            )
            + f" --write {args.write}"
        )
        write_model(args.write, model, threshold, command)


if __name__ == "__main__":
    main()
