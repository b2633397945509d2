"""Champion and challenger: a new adapter serves only if it routes the namespace's most recent
reports better than the current one, and costs the steps of tools without reports nothing.

The remembered steps (app/loop/memory.py) are cut by time: the newest ``HELD_OUT_SHARE`` of
them (at least ``MIN_HELD_OUT``) are held out, the challenger is trained on the rest and the
cards' anchors (``pairs.py``). Both models route every held-out step through the whole
pipeline; the challenger is promoted when

* it wins: of the held-out steps the two models disagree on (one puts the reported tool
  first, the other does not), the challenger has more, and so many more that a coin would
  give as many less often than ``SIGNIFICANCE`` (a one-sided sign test; McNemar 1947). A win
  of one step in ten is noise: wrong reports promoted 7 of 20 such models on a margin of
  one step (``bench/quality/learn_wrong_reports.py``);
* and it loses at most ``MAX_UNSEEN_LOSS`` of hit@1 on the held-out steps whose tool has no
  training reports (tools it must leave where they were).

Reports that name the wrong tool teach an adapter what the newer reports do not confirm:
random wrong reports win nothing on the held-out ones, so such a model is refused.

The calibration (``app.routing.calibration``) is fitted on the challenger's held-out answers
(its top candidate's confidence, and whether the reported tool was first); its calibration
error is measured two-fold (fitted on one half, read on the other) and it is kept only
when that beats the confidence as it is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.learning.pairs import ANCHOR_WEIGHT, step_pairs
from app.loop.memory import RememberedStep
from app.routing.adapter import DEFAULT_TRAINING, Learned, Training, anchors, joined, train
from app.routing.calibration import Calibration, expected_calibration_error
from app.routing.index import RouterIndex
from app.routing.pipeline import Router
from app.routing.types import RouteOptions, RouterConfig
from app.routing.view import NamespaceView

HELD_OUT_SHARE = 0.2
MIN_HELD_OUT = 10
MIN_TRAINING = 10  # remembered steps a namespace needs before anything is trained
SIGNIFICANCE = 0.05
MAX_UNSEEN_LOSS = 0.01


@dataclass(frozen=True, slots=True)
class Score:
    """How one model routed the held-out steps."""

    steps: int
    hits: int
    unseen: int  # held-out steps whose tool has no training reports
    unseen_hits: int
    confidence: tuple[float, ...]  # each step's top confidence (0: empty answer)
    hit: tuple[bool, ...]

    @property
    def hit_at_1(self) -> float:
        return self.hits / self.steps if self.steps else 0.0

    @property
    def unseen_hit_at_1(self) -> float | None:
        return self.unseen_hits / self.unseen if self.unseen else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The guard's decision on one challenger, and every figure behind it."""

    promoted: bool
    reason: str
    trained_on: int  # remembered steps the challenger was trained on
    held_out: int
    champion: Score | None
    challenger: Score | None
    ece_before: float | None  # the challenger's held-out top confidence, as it is
    ece_after: float | None  # … through its calibration (two-fold)
    seconds: float  # training and scoring

    def summary(self) -> dict[str, object]:
        def hits(score: Score | None) -> dict[str, object] | None:
            if score is None:
                return None
            unseen = score.unseen_hit_at_1
            return {
                "hit@1": round(score.hit_at_1, 4),
                "unseen_steps": score.unseen,
                "unseen_hit@1": None if unseen is None else round(unseen, 4),
            }

        return {
            "promoted": self.promoted,
            "reason": self.reason,
            "trained_on": self.trained_on,
            "held_out": self.held_out,
            "champion": hits(self.champion),
            "challenger": hits(self.challenger),
            "ece_before": self.ece_before,
            "ece_after": self.ece_after,
            "seconds": round(self.seconds, 2),
        }


def sign_test(wins: int, losses: int) -> float:
    """P(at least ``wins`` heads in ``wins + losses`` fair coin tosses)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n


def time_split(steps: Sequence[RememberedStep]) -> tuple[list[int], list[int]]:
    """(training, held out) positions of ``steps``: the newest share held out."""
    order = sorted(range(len(steps)), key=lambda i: (steps[i].last_seen, steps[i].text))
    held = max(MIN_HELD_OUT, round(len(order) * HELD_OUT_SHARE))
    held = min(held, len(order))
    return sorted(order[: len(order) - held]), sorted(order[len(order) - held :])


def score(
    index: RouterIndex,
    steps: Sequence[RememberedStep],
    vectors: np.ndarray,
    positions: Sequence[int],
    trained_tools: frozenset[str],
    config: RouterConfig,
    learned: Learned | None,
    prior: Mapping[str, float] | None = None,
) -> Score:
    hits = unseen = unseen_hits = 0
    confidence: list[float] = []
    hit: list[bool] = []
    router, view = Router(config), NamespaceView(index, prior=prior, learned=learned)
    for i in positions:
        step = steps[i]
        answer = router.route(view, step.text, vectors[i], RouteOptions(k=3))
        first = bool(answer) and answer[0].name == step.tool
        hits += first
        confidence.append(answer[0].confidence if answer else 0.0)
        hit.append(first)
        if step.tool not in trained_tools:
            unseen += 1
            unseen_hits += first
    return Score(len(positions), hits, unseen, unseen_hits, tuple(confidence), tuple(hit))


Fit = Callable[[Sequence[float], Sequence[bool]], Calibration | None]
FITS: dict[str, Fit] = {"isotonic": Calibration.fit, "platt": Calibration.platt}


def two_fold_ece(
    confidence: Sequence[float], hit: Sequence[bool], fit: Fit = Calibration.fit
) -> float | None:
    """The calibration error of a calibration read on answers it was not fitted on
    (alternate answers form the two folds); ``None`` when a fold is too small to fit."""
    halves = [list(range(0, len(hit), 2)), list(range(1, len(hit), 2))]
    read: list[float] = []
    truth: list[bool] = []
    for fit_on, read_on in (halves, halves[::-1]):
        fitted = fit([confidence[i] for i in fit_on], [hit[i] for i in fit_on])
        if fitted is None:
            return None
        read.extend(fitted(confidence[i]) for i in read_on)
        truth.extend(hit[i] for i in read_on)
    return round(expected_calibration_error(read, truth), 4)


def challenge(
    index: RouterIndex,
    steps: Sequence[RememberedStep],
    vectors: np.ndarray,
    needed: int,
    config: RouterConfig,
    champion: Learned | None,
    prior: Mapping[str, float] | None = None,
    training: Training = DEFAULT_TRAINING,
    version: int = 0,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[Learned | None, Verdict]:
    """Train a challenger on the older steps and judge it on the newest (module doc): the
    challenger (``None`` when there were too few steps to train one) and the verdict; it may
    serve only if ``verdict.promoted``."""
    began = clock()
    usable = [i for i, s in enumerate(steps) if s.tool in index.positions]
    if len(usable) < MIN_TRAINING + MIN_HELD_OUT:
        reason = f"{len(usable)} remembered steps; {MIN_TRAINING + MIN_HELD_OUT} are needed"
        return None, Verdict(False, reason, 0, 0, None, None, None, None, clock() - began)
    kept = [steps[i] for i in usable]
    kept_vectors = np.asarray(vectors, dtype=np.float32)[usable]
    train_at, held_at = time_split(kept)
    reported, picked = step_pairs(
        index, [kept[i] for i in train_at], kept_vectors[train_at], needed
    )
    tools = frozenset(kept[train_at[i]].tool for i in picked)
    pairs = joined(reported, anchors(index.embeddings, ANCHOR_WEIGHT))
    adapter = train(pairs, index.embeddings, sorted(tools), training)
    candidate = Learned(adapter, version=version)
    args = (index, kept, kept_vectors, held_at, tools, config)
    before = score(*args, champion, prior)
    after = score(*args, candidate, prior)
    ece_before = round(expected_calibration_error(after.confidence, after.hit), 4)
    measured = {
        name: e
        for name, fit in FITS.items()
        if (e := two_fold_ece(after.confidence, after.hit, fit)) is not None
    }
    ece_after = None
    if measured and min(measured.values()) < ece_before:
        best = min(measured, key=lambda name: measured[name])
        ece_after = measured[best]
        fitted = FITS[best](after.confidence, after.hit)
        candidate = Learned(adapter, version=version, calibration=fitted)
    lost = (
        0.0
        if before.unseen_hit_at_1 is None or after.unseen_hit_at_1 is None
        else before.unseen_hit_at_1 - after.unseen_hit_at_1
    )
    wins = sum(a and not b for a, b in zip(after.hit, before.hit, strict=True))
    losses = sum(b and not a for a, b in zip(after.hit, before.hit, strict=True))
    chance = sign_test(wins, losses)
    if wins <= losses or chance >= SIGNIFICANCE:
        reason = (
            f"held-out hit@1 {after.hit_at_1:.3f} against the current {before.hit_at_1:.3f}: "
            f"{wins} steps won, {losses} lost (p = {chance:.3f}; needs < {SIGNIFICANCE})"
        )
        promoted = False
    elif lost > MAX_UNSEEN_LOSS:
        reason = f"held-out steps of tools without reports lose {lost:.3f} of hit@1"
        promoted = False
    else:
        reason = (
            f"held-out hit@1 {before.hit_at_1:.3f} -> {after.hit_at_1:.3f} "
            f"({wins} steps won, {losses} lost, p = {chance:.3f})"
        )
        promoted = True
    verdict = Verdict(
        promoted,
        reason,
        len(picked),
        len(held_at),
        before,
        after,
        ece_before,
        ece_after,
        clock() - began,
    )
    return candidate, verdict
