"""An absolute confidence for a routed tool: the estimated chance it is the tool the step needs.

A candidate's ``score`` is relative (the best tool's relevance is 1.0 whatever the step), so it
cannot tell "here is your tool" from "nothing here fits". The confidence reads the evidence the
router already has on an absolute scale — the raw cosine and BM25 before z-scoring, how far the
tool stands out of the namespace and ahead of the next one, the namespace's size — and maps it
through a logistic regression (Platt-style calibration: Platt 1999; Niculescu-Mizil & Caruana
2005) fit by ``bench/fit_confidence.py`` on the tuning splits. Its coefficients are constants
in ``confidence_fit.py``; ``docs/ROUTING.md`` says how they were fit and measured.

Everything here is a few float operations per candidate: the evidence is computed from arrays
the route already holds (``pipeline.evidence``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A fit on a few thousand steps cannot tell 0.9999 from 0.999: confidences stay inside these,
# so min_confidence 1.0 always empties an answer and 0 never does.
FLOOR, CEILING = 0.001, 0.999
# Confidences are shown, and compared with min_confidence, at this many decimals.
CONFIDENCE_DECIMALS = 3


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the router knows about one candidate, on absolute scales (the model's inputs).

    ``fused``, ``lead`` and ``gap`` are in z-score units: the keyword + embedding fusion
    before it is divided by the best tool's (``fusion.relative_to_best``), prior and penalty
    left out. A missing neighbour counts as a tool of average relevance (fused 0).
    """

    cosine: float  # raw cosine of the whole step with the tool (0 without an embedding)
    ask_cosine: float  # best raw cosine over the whole step and each of its asks
    bm25: float  # raw BM25 of the whole step
    coverage: float  # share of the step's distinct terms the tool's card contains
    fused: float  # the tool's fused z-score
    lead: float  # fused minus the best other tool's (> 0 only for a clear winner)
    gap: float  # fused minus the next lower tool's (≥ 0)
    tools: int  # tools the step was routed among (the eligible ones)
    asks: int  # 1, or the number of asks a several-ask step was cut into
    penalty: float  # the rule check's part (≤ 0)


FEATURES: dict[str, Callable[[Evidence], float]] = {
    "cosine": lambda e: e.cosine,
    "ask_cosine": lambda e: e.ask_cosine,
    "log_bm25": lambda e: math.log1p(max(e.bm25, 0.0)),
    "coverage": lambda e: e.coverage,
    "fused": lambda e: e.fused,
    "lead": lambda e: e.lead,
    "gap": lambda e: e.gap,
    "log_tools": lambda e: math.log(max(e.tools, 1)),
    "log_asks": lambda e: math.log(max(e.asks, 1)),
    "penalty": lambda e: e.penalty,
}
"""Each input of the model, by name: a plain function of the evidence."""

# More of these never lowers the confidence: the fit keeps their coefficients ≥ 0.
MONOTONE: frozenset[str] = frozenset(
    {"cosine", "ask_cosine", "log_bm25", "coverage", "fused", "lead", "gap", "penalty"}
)


@dataclass(frozen=True)
class ConfidenceModel:
    """A logistic regression over named features, each standardised first:
    ``confidence = σ(intercept + Σ weight_f · (f(evidence) − mean_f) / scale_f)``.

    ``encoder`` names the encoder it was fit with: the raw cosines it reads are that model's.
    """

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float
    encoder: str

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown:
            raise ValueError(f"unknown confidence features {unknown}; choose from {list(FEATURES)}")
        sizes = {len(self.features), len(self.mean), len(self.scale), len(self.weights)}
        if len(sizes) != 1:
            raise ValueError("features, mean, scale and weights must have one entry each")
        if any(s <= 0 for s in self.scale):
            raise ValueError("every scale must be positive")

    def logit(self, evidence: Evidence) -> float:
        """The linear part: the confidence's log-odds."""
        total = self.intercept
        for name, mean, scale, weight in zip(
            self.features, self.mean, self.scale, self.weights, strict=True
        ):
            total += weight * (FEATURES[name](evidence) - mean) / scale
        return total

    def confidence(self, evidence: Evidence) -> float:
        """σ(logit) kept within [FLOOR, CEILING], rounded to ``CONFIDENCE_DECIMALS``."""
        return round(min(max(sigmoid(self.logit(evidence)), FLOOR), CEILING), CONFIDENCE_DECIMALS)


def sigmoid(x: float) -> float:
    """The logistic function, without overflow for large |x|."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def feature_rows(evidence: Sequence[Evidence], features: Sequence[str]) -> list[list[float]]:
    """The named features of each evidence, one row each (what the fit reads)."""
    return [[FEATURES[name](e) for name in features] for e in evidence]
