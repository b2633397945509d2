"""An absolute confidence for a routed tool: the estimated chance it is the tool the step needs.

A candidate's ``score`` is relative (the best tool's relevance is 1.0 whatever the step), so it
cannot tell "here is your tool" from "nothing here fits". The confidence reads the evidence the
router already has on absolute scales — the raw cosine and BM25 before z-scoring, how far the
tool stands out of the namespace and ahead of the next one, the namespace's size — through a
logistic regression whose inputs are monotone piecewise-linear functions of that evidence (a
shape-constrained generalised additive model, Hastie & Tibshirani 1986; fit as a calibrator in
the manner of Platt 1999). It is fit by ``bench/tools/fit_confidence.py`` on the tuning splits; its
constants are in ``confidence_fit.py``, and ``docs/ROUTING.md`` says how it was fit and measured.

Two such models: one for the leader (the tool with the best fused relevance, ``lead ≥ 0``) and
one for the others, since being second or fifth is a different question from being first.
Everything here is a few float operations per candidate on arrays the route already holds.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from app.routing.types import Candidate

# A fit on a few thousand steps cannot tell 0.9999 from 0.999: confidences stay inside these,
# so min_confidence 1.0 always empties an answer and 0 never does.
FLOOR, CEILING = 0.001, 0.999
# Confidences are shown, and compared with min_confidence, at this many decimals.
CONFIDENCE_DECIMALS = 3
# From this many candidates of one model on, their logits are cheaper as arrays (measured:
# 4 cost the same either way, 20 a third as arrays).
AS_ARRAYS = 5


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the router knows about one candidate, on absolute scales (the model's inputs).

    ``fused``, ``lead`` and ``gap`` are in z-score units: the keyword + embedding fusion
    before it is divided by the best tool's (``fusion.relative_to_best``), prior and penalty
    left out. A missing neighbour counts as a tool of average relevance (fused 0).
    """

    cosine: float  # raw cosine of the whole step with the tool (0 without an embedding)
    part_cosine: float  # best raw cosine over the whole step and each of its parts
    bm25: float  # raw BM25 of the whole step
    coverage: float  # share of the step's distinct terms the tool's card contains
    fused: float  # the tool's fused z-score
    lead: float  # fused minus the best other tool's (≥ 0 only for the leader)
    gap: float  # fused minus the next lower tool's (≥ 0)
    tools: int  # tools the step was routed among (the eligible ones)
    part_count: int  # 1, or the number of parts a step of several was read as
    penalty: float  # the rule check's contribution (≤ 0)


def relative(value: float, evidence: Evidence) -> float:
    """``value`` over the best fused score among the candidate and its neighbours (what the
    router's relative scores divide by); 0 when that is not positive."""
    best = evidence.fused - min(evidence.lead, 0.0)
    return value / best if best > 1e-9 else 0.0


FEATURES: dict[str, Callable[[Evidence], float]] = {
    "cosine": lambda e: e.cosine,
    "part_cosine": lambda e: e.part_cosine,
    "log_bm25": lambda e: math.log1p(max(e.bm25, 0.0)),
    "coverage": lambda e: e.coverage,
    "fused": lambda e: e.fused,
    "lead": lambda e: e.lead,
    "gap": lambda e: e.gap,
    "relevance": lambda e: relative(e.fused, e),
    "relative_lead": lambda e: relative(e.lead, e),
    "relative_gap": lambda e: relative(e.gap, e),
    "log_tools": lambda e: math.log(max(e.tools, 1)),
    "log_parts": lambda e: math.log(max(e.part_count, 1)),
    "penalty": lambda e: e.penalty,
}
"""Each input of the model, by name: a plain function of the evidence."""


def feature_columns(evidence: Sequence[Evidence]) -> dict[str, np.ndarray]:
    """Each of ``FEATURES`` for each evidence, as a column: the same floats as the functions
    (the logarithms by ``math``, whose last bits numpy's vectorised ones do not always share),
    without a call per feature and evidence."""
    raw = np.array(
        [
            (
                e.cosine,
                e.part_cosine,
                math.log1p(max(e.bm25, 0.0)),
                e.coverage,
                e.fused,
                e.lead,
                e.gap,
                math.log(max(e.tools, 1)),
                math.log(max(e.part_count, 1)),
                e.penalty,
            )
            for e in evidence
        ],
        dtype=np.float64,
    ).reshape(len(evidence), 10)
    cosine, part_cosine, log_bm25, coverage, fused, lead, gap, log_tools, log_parts, penalty = raw.T
    best = fused - np.where(lead > 0.0, 0.0, lead)  # relative's min(lead, 0.0), NaN too
    fits = best > 1e-9
    over = np.where(fits, best, 1.0)
    return {
        "cosine": cosine,
        "part_cosine": part_cosine,
        "log_bm25": log_bm25,
        "coverage": coverage,
        "fused": fused,
        "lead": lead,
        "gap": gap,
        "relevance": np.where(fits, fused / over, 0.0),
        "relative_lead": np.where(fits, lead / over, 0.0),
        "relative_gap": np.where(fits, gap / over, 0.0),
        "log_tools": log_tools,
        "log_parts": log_parts,
        "penalty": penalty,
    }


# More of these never lowers the confidence: the fit keeps their slopes ≥ 0.
MONOTONE: frozenset[str] = frozenset(
    {
        "cosine",
        "part_cosine",
        "log_bm25",
        "coverage",
        "fused",
        "lead",
        "gap",
        "relevance",
        "relative_lead",
        "relative_gap",
        "penalty",
    }
)


Piece = tuple[float, float, float]  # slope, start, end


@dataclass(frozen=True)
class Shape:
    """One feature's part of the log-odds: ``∫ from low to x of slope(t) dt``, ``x`` the
    feature clipped to ``[low, high]`` (the range it was fit on: no extrapolation), the slope
    being ``slopes[i]`` between consecutive edges ``(low, *knots, high)``."""

    feature: str
    low: float
    high: float
    knots: tuple[float, ...]
    slopes: tuple[float, ...]
    _pieces: tuple[Piece, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        # (slope, start, end) of each piece, made once: a route reads every shape per candidate.
        edges = self.edges()
        pieces = tuple(zip(self.slopes, edges, edges[1:], strict=False))
        object.__setattr__(self, "_pieces", pieces)
        if self.feature not in FEATURES:
            raise ValueError(
                f"unknown confidence feature {self.feature!r}; choose from {list(FEATURES)}"
            )
        edges = self.edges()
        if any(b <= a for a, b in itertools.pairwise(edges)):
            raise ValueError(f"{self.feature}: low < knots < high, increasing, is required")
        if len(self.slopes) != len(self.knots) + 1:
            raise ValueError(f"{self.feature}: one slope per piece (knots + 1) is required")

    def edges(self) -> tuple[float, ...]:
        return (self.low, *self.knots, self.high)

    def __call__(self, value: float) -> float:
        x = min(max(value, self.low), self.high)
        total = 0.0
        for slope, start, end in self._pieces:
            if x <= start:
                break
            total += slope * (min(x, end) - start)
        return total


@dataclass(frozen=True)
class Logistic:
    """``σ(intercept + Σ shape(feature(evidence)))``."""

    intercept: float
    shapes: tuple[Shape, ...]
    # Each shape as (feature function, low, high, pieces), made once: ``logit`` then runs in
    # one plain loop (a route reads every shape of every candidate it answers with).
    _plan: tuple[tuple[Callable[[Evidence], float], float, float, tuple[Piece, ...]], ...] = field(
        init=False, repr=False, compare=False, default=()
    )

    # The same as arrays, one column a shape and one a piece (``logits``).
    _columns: tuple[np.ndarray, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        plan = tuple((FEATURES[s.feature], s.low, s.high, s._pieces) for s in self.shapes)
        object.__setattr__(self, "_plan", plan)
        lows = np.array([s.low for s in self.shapes], dtype=np.float64)
        highs = np.array([s.high for s in self.shapes], dtype=np.float64)
        of = [(i, *piece) for i, s in enumerate(self.shapes) for piece in s._pieces]
        shape, slope, start, end = np.array(of, dtype=np.float64).reshape(-1, 4).T
        columns = (lows, highs, shape.astype(np.int64), slope, start, end)
        object.__setattr__(self, "_columns", columns)

    def logit(self, evidence: Evidence) -> float:
        """``intercept + Σ shape(feature(evidence))``, inlined."""
        total = self.intercept
        for feature, low, high, pieces in self._plan:
            x = min(max(feature(evidence), low), high)
            for slope, start, end in pieces:
                if x <= start:
                    break
                total += slope * ((x if x < end else end) - start)
        return total

    def logits(self, evidence: Sequence[Evidence]) -> np.ndarray:
        """``logit`` of each evidence, as arrays: the same operations in the same order, so
        the same floats (a route reads 20 candidates when a model serves). Each piece's
        term is 0 where ``logit`` breaks before it (adding 0 leaves a sum as it was); the
        sum runs left to right (``cumsum``, not ``sum``, which adds pairwise)."""
        lows, highs, shape, slope, start, end = self._columns
        columns = feature_columns(evidence)
        values = np.stack([columns[s.feature] for s in self.shapes], axis=1)
        x = np.where(lows > values, lows, values)  # max(value, low), NaN kept as max keeps it
        x = np.where(highs < x, highs, x)[:, shape]  # min(x, high)
        terms = np.where(x <= start, 0.0, slope * (np.where(x < end, x, end) - start))
        first = np.full((len(evidence), 1), self.intercept)
        return np.cumsum(np.concatenate([first, terms], axis=1), axis=1)[:, -1]


@dataclass(frozen=True)
class ConfidenceModel:
    """The leader's model and the others'; ``encoder`` names the encoder it was fit with
    (the raw cosines it reads are that encoder's)."""

    leader: Logistic
    others: Logistic
    encoder: str

    def logit(self, evidence: Evidence) -> float:
        """The confidence's log-odds, by the model of the candidate's role."""
        return (self.leader if evidence.lead >= 0 else self.others).logit(evidence)

    def confidence(self, evidence: Evidence) -> float:
        """σ(logit) kept within [FLOOR, CEILING], rounded to ``CONFIDENCE_DECIMALS``."""
        return shown(self.logit(evidence))

    def confidences(self, evidence: Sequence[Evidence]) -> list[float]:
        """``confidence`` of each evidence: a model's logits as arrays when it reads
        ``AS_ARRAYS`` or more of them (fewer cost less one by one)."""
        out = [0.0] * len(evidence)
        for model, lead in ((self.leader, True), (self.others, False)):
            mine = [j for j, e in enumerate(evidence) if (e.lead >= 0) is lead]
            if len(mine) >= AS_ARRAYS:
                logits = model.logits([evidence[j] for j in mine]).tolist()
            else:
                logits = [model.logit(evidence[j]) for j in mine]
            for j, logit in zip(mine, logits, strict=True):
                out[j] = shown(logit)
        return out


def shown(logit: float) -> float:
    """σ(logit) kept within [FLOOR, CEILING], rounded to ``CONFIDENCE_DECIMALS``."""
    return round(min(max(sigmoid(logit), FLOOR), CEILING), CONFIDENCE_DECIMALS)


def sigmoid(x: float) -> float:
    """The logistic function, without overflow for large |x|."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def pieces(
    values: Sequence[float], low: float, high: float, knots: Sequence[float]
) -> list[list[float]]:
    """For each value, how far it runs along each piece of ``(low, *knots, high)`` (clipped):
    the columns a fit weighs with the pieces' slopes (``Shape`` is their weighted sum)."""
    edges = (low, *knots, high)
    out = []
    for value in values:
        x = min(max(value, low), high)
        out.append([min(max(x - a, 0.0), b - a) for a, b in itertools.pairwise(edges)])
    return out


def non_increasing(answer: list[Candidate]) -> list[Candidate]:
    """The answer with each confidence at most the one above it (a running minimum): every
    answer's confidence falls or holds down the ranking, by construction. The first
    candidate's stays the fitted model's; a lower one the model rates above it is shown at
    the one above's (docs/ROUTING.md, "Confidence")."""
    out, low = [], 1.0
    for candidate in answer:
        if candidate.confidence > low:
            candidate = dataclasses.replace(candidate, confidence=low)
        low = candidate.confidence
        out.append(candidate)
    return out


def falling(confidences: Sequence[float]) -> list[float]:
    """The confidences ``non_increasing`` shows for an answer with these."""
    out, low = [], 1.0
    for confidence in confidences:
        low = low if confidence > low else confidence
        out.append(low)
    return out
