"""Does the confidence tell "here is your tool" from "nothing here fits"? (`toolreach eval`)

Measured on the top candidate of each query, with the full pipeline:

* calibration on the in-scope queries — expected calibration error, ECE (Naeini et al. 2015;
  Guo et al. 2017): equal-width confidence bins, ``Σ_b n_b/n · |accuracy_b − confidence_b|``,
  where accuracy is the share of tops that are a labelled tool;
* the no-fit test — leave-tools-out: a sample of the same queries is asked of the namespace
  with their labelled tools taken out (the index rebuilt without them,
  ``RouterIndex.without``), so the right answer is "nothing here"; AUROC of the top
  confidence between in-scope and no-fit queries (the Mann–Whitney U statistic, Hanley &
  McNeil 1982), and at a ``min_confidence`` the share of each answered empty.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.routing import NamespaceView, RouteOptions, Router, RouterConfig, RouterIndex
from app.routing.calibration import ECE_BINS, expected_calibration_error, reliability
from app.routing.memory import QueryMemory
from app.routing.signals import Cosines, gemv_rows

NO_FIT_SAMPLE = 300  # queries asked again without their tools (each set's index rebuilt once)
NO_FIT_SEED = 17


@dataclass(frozen=True)
class Asked:
    """One routed query as the report sees it: its top candidate's confidence (0 when the
    answer was empty) and whether that top is a labelled tool."""

    confidence: float
    hit: bool


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """The chance a random positive scores above a random negative, ties counting half
    (Mann–Whitney U / (n₊ n₋), from average ranks); 0.5 when either side is empty."""
    if not len(positive) or not len(negative):
        return 0.5
    values = np.concatenate([np.asarray(positive, float), np.asarray(negative, float)])
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    ranks[order] = np.arange(1, values.size + 1)
    for value in np.unique(values):  # ties share their average rank
        same = values == value
        if same.sum() > 1:
            ranks[same] = ranks[same].mean()
    n_pos, n_neg = len(positive), len(negative)
    u = ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def top_of(answer: Sequence[Any], relevant: frozenset[str]) -> Asked:
    """The report's view of one answer (a list of candidates, best first)."""
    if not answer:
        return Asked(0.0, False)
    return Asked(answer[0].confidence, answer[0].name in relevant)


def sample(n_queries: int, size: int = NO_FIT_SAMPLE, seed: int = NO_FIT_SEED) -> list[int]:
    """Which queries the no-fit test asks again: ``size`` of them, the same ones every run."""
    chosen = random.Random(seed).sample(range(n_queries), min(size, n_queries))
    return sorted(chosen)


def asked_without(
    index: RouterIndex,
    corpus: Sequence[Sequence[str]],
    questions: Sequence[tuple[str, frozenset[str], np.ndarray]],
    config: RouterConfig,
    cosines: Cosines = gemv_rows,
    prepare: Callable[[np.ndarray], None] | None = None,
    examples: QueryMemory | None = None,
) -> list[Asked]:
    """Each ``(text, relevant, vectors)`` routed against ``index`` less its relevant tools.

    Queries with the same labels share one rebuilt index. ``prepare`` sees each rebuilt
    tool matrix first, as a service's index does (the int8 copy of a large one); ``examples``:
    the cards' examples (those of a left-out tool have no tool to vote for)."""
    by_labels: dict[frozenset[str], list[int]] = {}
    for i, (_, relevant, _) in enumerate(questions):
        by_labels.setdefault(relevant, []).append(i)
    out: dict[int, Asked] = {}
    router = Router(config, cosines=cosines)
    for relevant, members in by_labels.items():
        smaller = index.without(relevant)
        if prepare is not None:
            prepare(smaller.embeddings)
        for i in members:
            text, _, vectors = questions[i]
            view = NamespaceView(smaller, examples=examples)
            answer = router.route(view, text, vectors, RouteOptions(k=1))
            out[i] = top_of(answer, relevant)
    return [out[i] for i in range(len(questions))]


def confidence_report(
    in_scope: Sequence[Asked], no_fit: Sequence[Asked], min_confidence: float
) -> dict[str, Any]:
    """The numbers `toolreach eval` shows for the confidence (rounded to 4 decimals)."""
    conf = [a.confidence for a in in_scope]
    hits = [a.hit for a in in_scope]
    empty = [a.confidence < min_confidence for a in in_scope]
    right = [e for e, a in zip(empty, in_scope, strict=True) if a.hit]
    return {
        "in_scope_queries": len(in_scope),
        "top_accuracy": _share(hits),
        "mean_top_confidence": round(float(np.mean(conf)), 4) if conf else 0.0,
        "ece": round(expected_calibration_error(conf, hits), 4),
        "ece_bins": ECE_BINS,
        "no_fit_queries": len(no_fit),
        "no_fit_mean_top_confidence": (
            round(float(np.mean([a.confidence for a in no_fit])), 4) if no_fit else 0.0
        ),
        "auroc": round(auroc(conf, [a.confidence for a in no_fit]), 4),
        "min_confidence": min_confidence,
        "no_fit_emptied": _share([a.confidence < min_confidence for a in no_fit]),
        "in_scope_emptied": _share(empty),
        "in_scope_right_emptied": _share(right),
        "reliability": reliability(conf, hits),
    }


def _share(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def format_confidence(report: dict[str, Any]) -> list[str]:
    """The confidence block of the eval table."""
    r = report
    return [
        f"confidence (top candidate, full pipeline): ECE {r['ece']:.3f} ({r['ece_bins']} bins) "
        f"over {r['in_scope_queries']} queries, top right {r['top_accuracy']:.3f}, "
        f"mean confidence {r['mean_top_confidence']:.3f}",
        f"no-fit (labelled tools left out, {r['no_fit_queries']} queries): AUROC "
        f"{r['auroc']:.3f}, mean top confidence {r['no_fit_mean_top_confidence']:.3f}",
        f"at min_confidence {r['min_confidence']}: no-fit answered empty "
        f"{r['no_fit_emptied']:.3f}, in-scope emptied {r['in_scope_emptied']:.3f} "
        f"(with a right top {r['in_scope_right_emptied']:.3f})",
    ]
