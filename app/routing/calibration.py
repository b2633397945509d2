"""A namespace's own calibration of the confidence, from its reports.

Every report is a label for the answer it closes: its top candidate was the tool used, or it
was not. An isotonic regression (pool-adjacent-violators; Zadrozny & Elkan 2002) of those
outcomes on the top candidate's confidence gives a non-decreasing map, read between its
blocks by linear interpolation. Non-decreasing matters: applied to every candidate of an
answer whose confidences never rise down the list (``confidence.non_increasing``), the
calibrated ones never rise either, so the ranking and the confidence keep agreeing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.routing.confidence import CEILING, FLOOR

ECE_BINS = 10  # the calibration error's equal-width bins of [0, 1]
# Fewer labelled answers than this and a namespace keeps the fitted model's confidence.
MIN_LABELS = 50


@dataclass(frozen=True, slots=True)
class Calibration:
    """The map: at confidence ``knots[i]`` the calibrated value is ``values[i]``; between
    knots linear, outside them the end values."""

    knots: tuple[float, ...]
    values: tuple[float, ...]
    labels: int  # how many answers it was fitted on

    @classmethod
    def fit(cls, confidence: Sequence[float], hit: Sequence[bool]) -> Calibration | None:
        """Isotonic fit of ``hit`` on ``confidence``; ``None`` below ``MIN_LABELS`` labels."""
        if len(confidence) != len(hit):
            raise ValueError("one outcome per confidence")
        if len(confidence) < MIN_LABELS:
            return None
        order = np.argsort(np.asarray(confidence, dtype=np.float64), kind="stable")
        x = np.asarray(confidence, dtype=np.float64)[order]
        y = np.asarray(hit, dtype=np.float64)[order]
        # blocks of (sum of y, count, sum of x), merged while a block is above the next
        sums: list[float] = []
        counts: list[float] = []
        xs: list[float] = []
        for xi, yi in zip(x.tolist(), y.tolist(), strict=True):
            sums.append(yi)
            counts.append(1.0)
            xs.append(xi)
            while len(sums) > 1 and sums[-2] / counts[-2] >= sums[-1] / counts[-1]:
                s, c, xx = sums.pop(), counts.pop(), xs.pop()
                sums[-1] += s
                counts[-1] += c
                xs[-1] += xx
        knots = tuple(xx / c for xx, c in zip(xs, counts, strict=True))
        values = tuple(min(max(s / c, FLOOR), CEILING) for s, c in zip(sums, counts, strict=True))
        return cls(knots, values, len(confidence))

    @classmethod
    def platt(cls, confidence: Sequence[float], hit: Sequence[bool]) -> Calibration | None:
        """A logistic fit of ``hit`` on the confidence's logit (Platt 1999: two parameters,
        steadier than isotonic on a few hundred labels), kept as the same map on a grid of
        knots; ``None`` below ``MIN_LABELS`` labels or when the fit is not increasing."""
        if len(confidence) != len(hit):
            raise ValueError("one outcome per confidence")
        if len(confidence) < MIN_LABELS:
            return None
        c = np.clip(np.asarray(confidence, dtype=np.float64), FLOOR, CEILING)
        x = np.log(c / (1 - c))
        y = np.asarray(hit, dtype=np.float64)
        a, b = 1.0, 0.0
        for _ in range(50):  # Newton's method on the log-loss, lightly regularised
            p = 1 / (1 + np.exp(-(a * x + b)))
            w = p * (1 - p) + 1e-9
            grad = np.array([((p - y) * x).sum() + 1e-3 * a, (p - y).sum()])
            hess = np.array([[(w * x * x).sum() + 1e-3, (w * x).sum()], [(w * x).sum(), w.sum()]])
            step = np.linalg.solve(hess, grad)
            a, b = a - step[0], b - step[1]
            if np.abs(step).max() < 1e-9:
                break
        if not a > 0:
            return None
        grid = np.linspace(FLOOR, CEILING, 201)
        values = 1 / (1 + np.exp(-(a * np.log(grid / (1 - grid)) + b)))
        clipped = tuple(min(max(float(v), FLOOR), CEILING) for v in values)
        return cls(tuple(float(g) for g in grid), clipped, len(confidence))

    def __call__(self, confidence: float) -> float:
        return float(np.interp(confidence, self.knots, self.values))

    def to_json(self) -> dict[str, object]:
        return {"knots": list(self.knots), "values": list(self.values), "labels": self.labels}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Calibration:
        knots = tuple(float(v) for v in data["knots"])  # type: ignore[attr-defined]
        values = tuple(float(v) for v in data["values"])  # type: ignore[attr-defined]
        if len(knots) != len(values) or not knots:
            raise ValueError("a calibration needs as many values as knots, at least one")
        return cls(knots, values, int(data["labels"]))  # type: ignore[call-overload]


def expected_calibration_error(
    confidence: Sequence[float], hit: Sequence[bool], bins: int = ECE_BINS
) -> float:
    """ECE over ``bins`` equal-width bins of [0, 1] (a confidence of 1.0 falls in the last;
    Naeini et al. 2015)."""
    rows = reliability(confidence, hit, bins)
    total = sum(r["queries"] for r in rows)
    if not total:
        return 0.0
    return sum(r["queries"] * abs(r["accuracy"] - r["confidence"]) for r in rows) / total


def reliability(
    confidence: Sequence[float], hit: Sequence[bool], bins: int = ECE_BINS
) -> list[dict[str, Any]]:
    """Per non-empty bin: its bounds, how many queries, their mean confidence and accuracy
    (the reliability diagram's points)."""
    conf = np.asarray(confidence, dtype=np.float64)
    ok = np.asarray(hit, dtype=np.float64)
    which = np.minimum((conf * bins).astype(np.int64), bins - 1)
    rows = []
    for b in range(bins):
        inside = which == b
        if inside.any():
            rows.append(
                {
                    "bin": [b / bins, (b + 1) / bins],
                    "queries": int(inside.sum()),
                    "confidence": float(conf[inside].mean()),
                    "accuracy": float(ok[inside].mean()),
                }
            )
    return rows
