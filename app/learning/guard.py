"""One guard over everything learned from reports: a challenger (the reranker, with the usage
prior's and query memory's evidence among its features: app/routing/reranker.py) serves
only if it routes the namespace's newest reports better than the cold ranking, beyond
chance, no worse than the serving model, costs the steps of tools it does not move nothing,
and changes a key's routes only as far as other keys agree (bounded influence,
``scope.py``).

The remembered steps (app/loop/memory.py) are cut by time into blocks: the newest
``EXAM_BLOCKS`` blocks of ``HELD_OUT_SHARE`` of them (at least ``MIN_HELD_OUT`` each) are
held out, each from a challenger trained on every step older than it (``training.py``:
leave-one-out report features, its gate ``delta`` chosen out of fold on those older
steps). The blocks are one exam: every held-out step is routed by its block's challenger
through the whole pipeline (``exam.py``), twice: as a key that reported none, and as the
key that reported it. Six blocks judge 60 % of the steps, not 20 %: on MetaTool one block
was too few steps to tell a gain from chance on any of three seeds. The serving model is
judged without each block's steps in its bank, as the challengers are.

1. **Other keys' routes.** The challenger moves its confirmed tools in every key's routes
   only if, routed as a key that reported none, it wins the held-out steps against the cold
   ranking, each key's steps counted at most as often as the ``trust_keys``-th busiest
   key's (``trust.key_capped``): the key that writes the reports also writes the newest
   steps, so one key alone (fewer than ``trust_keys``) can never pass this. Otherwise it
   moves no tool there (nor reads those tools' reports); it is refused if that costs other
   keys, beyond chance, what the cold ranking gave them.
2. **Its own routes**, as it will then serve (each step routed as its reporting key): the
   held-out hit@1 it gains over the cold ranking has a one-sided 95 % interval (a normal
   approximation of the mean of the steps' paired differences) whose lower end is above 0:
   an interval that excludes a loss, not one number; against the serving model it wins
   more held-out steps than it loses (one trained on the same reports changes nothing);
   no key's own steps lose beyond chance; and, in both views, it loses at most
   ``MAX_UNSEEN_LOSS`` of hit@1 on the held-out steps whose tool that view does not move.

What is judged is a way of training: if it is promoted, what serves is the same training
on every remembered step (``REFIT``: the newest reports were the exam; they are now
trained on too), its scope from every step, confirmed for every key only if the exam
found that other keys agree, with the calibration the exam fitted. A refused challenger
never serves, nor anything trained like it.

Reports that name the wrong tool teach a model what the newer reports do not confirm:
random wrong reports win nothing on the held-out ones, so such a training is refused. One
key's consistent wrong reports may win its own newest steps: such a model serves that
key's own routes only.

The calibration (``app.routing.calibration``) of the model's probability is fitted on the
challengers' held-out answers in their own view, where the top confidence is the model's
(an answer it cannot move is the cold one: ``Learned.rerank``): its top candidate's
probability, and whether the reported tool was first; its calibration error is measured
two-fold (fitted on one half, read on the other) and it is kept only when that beats the
probability as it is.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from app.learning.exam import SIGNIFICANCE, HeldOut, Score, harmed, sign_test
from app.learning.scope import scope_of
from app.learning.training import DEFAULT_TREES, Trees, bank_of, train_reranker
from app.loop.memory import RememberedStep
from app.loop.trust import key_capped
from app.routing.calibration import Calibration, expected_calibration_error
from app.routing.index import RouterIndex
from app.routing.reranker import Learned, Reranker
from app.routing.types import Candidate, RouterConfig

HELD_OUT_SHARE = 0.1  # of the remembered steps, a block
EXAM_BLOCKS = 6  # the newest blocks judged, each by a challenger trained on the steps before it
REFIT = True  # a promoted training serves trained on every step, not only on the older ones
MIN_HELD_OUT = 10
MIN_TRAINING = 10  # remembered steps a namespace needs before anything is trained
MAX_UNSEEN_LOSS = 0.01
Z_ONE_SIDED = 1.645  # the normal quantile of 1 - SIGNIFICANCE


@dataclass(frozen=True, slots=True)
class Others:
    """How a challenger routes the held-out steps as a key that reported none sees it, and
    whether other keys agree with what it learned (``scope.py``)."""

    champion: Score
    challenger: Score
    wins: float  # held-out steps won and lost, each key counted at most as often as the
    losses: float  # trust_keys-th busiest (``trust.key_capped``)
    shared: bool  # it moves the confirmed tools in every key's routes


@dataclass(frozen=True, slots=True)
class Verdict:
    """The guard's decision on one challenger, and every figure behind it."""

    promoted: bool
    reason: str
    trained_on: int  # remembered steps the challenger was trained on
    held_out: int
    champion: Score | None  # each held-out step routed as its own reporting key
    challenger: Score | None
    ece_before: float | None  # the challenger's held-out top confidence, as it is
    ece_after: float | None  # … through its calibration (two-fold)
    seconds: float  # training and scoring
    others: Others | None = None  # … routed as a key that reported none
    keys: int = 0  # distinct keys whose reports it was trained on
    confirmed: int = 0  # tools it may move in every key's routes (if shared)
    own: int = 0  # tools it may move only in the one key's routes that reported them
    cold: Score | None = None  # each held-out step routed cold
    interval: tuple[float, float] | None = None  # gain over cold: (lower end, gain)
    delta: float | None = None  # the gate chosen out of fold

    def summary(self) -> dict[str, object]:
        others = self.others
        return {
            "promoted": self.promoted,
            "reason": self.reason,
            "trained_on": self.trained_on,
            "held_out": self.held_out,
            "cold": hits(self.cold),
            "champion": hits(self.champion),
            "challenger": hits(self.challenger),
            "ece_before": self.ece_before,
            "ece_after": self.ece_after,
            "seconds": round(self.seconds, 2),
            "gain": None if self.interval is None else self.interval[1],
            "gain_lower": None if self.interval is None else self.interval[0],
            "delta": self.delta,
            "keys": self.keys,
            "shared": others is not None and others.shared,
            "confirmed_tools": self.confirmed if others is not None and others.shared else 0,
            "own_tools": self.own,
            "other_keys": None
            if others is None
            else {
                "champion": hits(others.champion),
                "challenger": hits(others.challenger),
                "wins": round(others.wins, 2),
                "losses": round(others.losses, 2),
            },
        }


def hits(score: Score | None) -> dict[str, object] | None:
    if score is None:
        return None
    unseen = score.unseen_hit_at_1
    return {
        "hit@1": round(score.hit_at_1, 4),
        "unseen_steps": score.unseen,
        "unseen_hit@1": None if unseen is None else round(unseen, 4),
    }


def time_blocks(
    steps: Sequence[RememberedStep], blocks: int, share: float = HELD_OUT_SHARE
) -> list[tuple[list[int], list[int]]]:
    """(training, held out) positions of ``steps`` for each of the ``blocks`` newest blocks
    of ``HELD_OUT_SHARE`` (at least ``MIN_HELD_OUT`` steps each), oldest block first: each
    held out from a challenger trained on every step older than it. Fewer blocks when the
    steps older than one would be fewer than ``MIN_TRAINING``. The steps of one text (each
    of a tool reported for it) are never cut apart: they come at the text's newest report,
    so a held-out text's sibling is never among the steps a challenger is trained on."""
    newest: dict[str, datetime] = {}  # a text's steps stay together, at its newest report
    for s in steps:
        newest[s.text] = max(newest.get(s.text, s.last_seen), s.last_seen)
    order = sorted(range(len(steps)), key=lambda i: (newest[steps[i].text], steps[i].text))
    size = min(max(MIN_HELD_OUT, round(len(order) * share)), len(order))
    out: list[tuple[list[int], list[int]]] = []
    end = len(order)
    for _ in range(max(blocks, 1)):
        start = end - size
        while 0 < start < end and steps[order[start - 1]].text == steps[order[start]].text:
            start -= 1  # not a text's steps on both sides
        if out and start < MIN_TRAINING:
            break
        out.append((sorted(order[: max(start, 0)]), sorted(order[max(start, 0) : end])))
        end = start
    return out[::-1]


class Exam:
    """Several blocks of held-out steps, each judged on its own models (one a block), read
    as one exam: its scores and votes are the blocks' together."""

    def __init__(self, blocks: list[HeldOut]) -> None:
        self.blocks = blocks

    def score(self, models: Sequence[Learned | None], own: bool) -> Score:
        parts = [b.score(m, own) for b, m in zip(self.blocks, models, strict=True)]
        return Score(
            tuple(c for p in parts for c in p.confidence),
            tuple(h for p in parts for h in p.hit),
            (),
            tuple(s for p in parts for s in p.spoke),
        )

    def unseen(self, models: Sequence[Learned], own: bool) -> tuple[bool, ...]:
        return tuple(u for b, m in zip(self.blocks, models, strict=True) for u in b.unseen(m, own))

    def votes(self, after: Score, before: Score) -> dict[str, tuple[float, float]]:
        """Key → (wins, losses) of ``after`` over ``before`` over every block."""
        votes: dict[str, tuple[float, float]] = {}
        start = 0
        for block in self.blocks:
            n = len(block.positions)
            cut = slice(start, start + n)
            a = Score(after.confidence[cut], after.hit[cut])
            b = Score(before.confidence[cut], before.hit[cut])
            for key, (w, lost) in block.votes(a, b).items():
                had = votes.get(key, (0.0, 0.0))
                votes[key] = (had[0] + w, had[1] + lost)
            start += n
        return votes


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
    trees: Trees = DEFAULT_TREES,
    version: int = 0,
    clock: Callable[[], float] = time.perf_counter,
    blocks: int | None = None,
    refit: bool | None = None,
    share: float = HELD_OUT_SHARE,
) -> tuple[Learned | None, Verdict]:
    """Train challengers on older steps and judge them on the newer (module doc): what may
    serve (``None`` when there were too few steps to train one) and the verdict; it may
    serve only if ``verdict.promoted``. ``needed``: ``trust_keys``; ``blocks``: how many
    newest blocks are judged (``EXAM_BLOCKS``); ``refit``: a promoted procedure serves
    trained on every step (``REFIT``)."""
    blocks = EXAM_BLOCKS if blocks is None else blocks
    refit = REFIT if refit is None else refit
    began = clock()
    usable = [i for i, s in enumerate(steps) if s.tool in index.positions]
    if len(usable) < MIN_TRAINING + MIN_HELD_OUT:
        reason = f"{len(usable)} remembered steps; {MIN_TRAINING + MIN_HELD_OUT} are needed"
        return None, Verdict(False, reason, 0, 0, None, None, None, None, clock() - began)
    kept = [steps[i] for i in usable]
    kept_vectors = np.asarray(vectors, dtype=np.float32)[usable]
    exam = Exam([])
    wholes: list[Learned] = []
    champions: list[Learned | None] = []
    trained_on = 0
    routed: dict[str, list[Candidate]] = {}  # step text → its cold answer: trainings, exam
    for train_at, held_at in time_blocks(kept, blocks, share):
        whole = trained_model(index, kept, kept_vectors, train_at, needed, config, trees, routed)
        trained_on = max(trained_on, whole.ranker.bank.weights.size)
        exam.blocks.append(HeldOut(index, kept, kept_vectors, held_at, config, routed))
        wholes.append(whole)
        fair = champion
        if champion is not None:  # judged as the challenger is: without the held-out steps
            without = ranker_without(champion.ranker, frozenset(kept[i].text for i in held_at))
            fair = dataclasses.replace(champion, ranker=without, calibration=None)
        champions.append(fair)
    candidates, others = for_other_keys(exam, wholes, needed)
    unseen = exam.unseen(candidates, own=True)
    cold = exam.score([None] * len(candidates), own=True).seen_by(unseen)
    before = cold if champion is None else exam.score(champions, own=True).seen_by(unseen)
    after = exam.score(candidates, own=True).seen_by(unseen)
    calibration, ece_before, ece_after = calibrated(after)
    promoted, reason = decide(exam, cold, before, after, others, needed)
    served = candidates[-1]
    if promoted and refit:  # the procedure judged, trained on every step
        everything = sorted(range(len(kept)), key=lambda i: (kept[i].last_seen, kept[i].text))
        served = trained_model(index, kept, kept_vectors, everything, needed, config, trees, routed)
        if not others.shared:
            served = dataclasses.replace(served, confirmed=frozenset())
    served = dataclasses.replace(served, calibration=calibration, version=version)
    taught = set(served.ranker.bank.texts)
    verdict = Verdict(
        promoted,
        reason,
        served.ranker.bank.weights.size if promoted and refit else trained_on,
        after.steps,
        before,
        after,
        ece_before,
        ece_after,
        clock() - began,
        others,
        len({key for s in kept if s.text in taught for key in s.keys}),
        len(served.confirmed or ()),
        sum(len(t) for t in served.own.values()),
        cold,
        gain_interval(cold, after),
        served.ranker.delta,
    )
    return served, verdict


def trained_model(
    index: RouterIndex,
    kept: Sequence[RememberedStep],
    vectors: np.ndarray,
    at: Sequence[int],
    needed: int,
    config: RouterConfig,
    trees: Trees,
    routed: dict[str, list[Candidate]],
) -> Learned:
    """A reranker trained on the steps ``at`` that some key may read (in time order, for
    the folds its gate is chosen on), with the scope those steps give it."""
    picked = [i for i in at if kept[i].shared(needed) > 0]
    picked.sort(key=lambda i: (kept[i].last_seen, kept[i].text))
    trained = [kept[i] for i in picked]
    bank = bank_of(trained, vectors[picked], needed)
    scope = scope_of(trained, needed)
    ranker = train_reranker(index, config, bank, vectors[picked], trees, routed=routed)
    return Learned(ranker, confirmed=scope.confirmed, own=scope.own)


def ranker_without(ranker: Reranker, texts: frozenset[str]) -> Reranker:
    return dataclasses.replace(ranker, bank=ranker.bank.without(texts), _digest=[])


def for_other_keys(
    exam: Exam, candidates: Sequence[Learned], needed: int
) -> tuple[list[Learned], Others]:
    """The challengers as they may serve other keys, and how they route for them against
    the cold ranking: they move their confirmed tools in every key's routes only if they
    win the held-out steps routed as a key that reported none, each key counted at most as
    often as the ``needed``-th busiest (``key_capped``: fewer keys than ``needed`` cannot
    pass it); else in nobody's but the keys' that alone reported a tool (``scope.py``)."""
    models = list(candidates)
    before = exam.score([None] * len(models), own=False)
    after = exam.score(models, own=False)
    wins, losses = key_capped(exam.votes(after, before), needed)
    shared = wins > losses and sign_test(round(wins), round(losses)) < SIGNIFICANCE
    if not shared:
        models = [dataclasses.replace(m, confirmed=frozenset()) for m in models]
        after = exam.score(models, own=False)
        wins, losses = key_capped(exam.votes(after, before), needed)
    unseen = exam.unseen(models, own=False)
    return models, Others(before.seen_by(unseen), after.seen_by(unseen), wins, losses, shared)


def calibrated(after: Score) -> tuple[Calibration | None, float, float | None]:
    """The better calibration of the challengers' held-out top confidence, where it is the
    model's (an answer it cannot move keeps the cold confidence: ``Learned.rerank``), if one
    beats the confidence as it is (two-fold; else None); the error before and after."""
    spoke = [i for i, s in enumerate(after.spoke) if s]
    confidence = [after.confidence[i] for i in spoke]
    hit = [after.hit[i] for i in spoke]
    ece_before = round(expected_calibration_error(confidence, hit), 4) if spoke else 0.0
    measured = {
        name: e
        for name, fit in FITS.items()
        if (e := two_fold_ece(confidence, hit, fit)) is not None
    }
    if not measured or min(measured.values()) >= ece_before:
        return None, ece_before, None
    best = min(measured, key=lambda name: measured[name])
    return FITS[best](confidence, hit), ece_before, measured[best]


def unseen_loss(before: Score, after: Score) -> float:
    """The hit@1 lost on the held-out steps whose tool the challenger's view does not move."""
    if before.unseen_hit_at_1 is None or after.unseen_hit_at_1 is None:
        return 0.0
    return before.unseen_hit_at_1 - after.unseen_hit_at_1


def gain_interval(before: Score, after: Score) -> tuple[float, float]:
    """The one-sided ``1 - SIGNIFICANCE`` interval of the held-out hit@1 gained, paired
    step by step (a normal approximation of the mean of the steps' differences in -1, 0,
    1): (its lower end, the gain)."""
    n = after.steps
    if n == 0:
        return 0.0, 0.0
    wins = sum(a and not b for a, b in zip(after.hit, before.hit, strict=True))
    losses = sum(b and not a for a, b in zip(after.hit, before.hit, strict=True))
    mean = (wins - losses) / n
    spread = max((wins + losses) / n - mean * mean, 0.0)
    return round(mean - Z_ONE_SIDED * math.sqrt(spread / n), 4), round(mean, 4)


def decide(
    held: Exam, cold: Score, before: Score, after: Score, others: Others, needed: int
) -> tuple[bool, str]:
    """Promoted or not, and why (module doc)."""
    low, gain = gain_interval(cold, after)
    if low <= 0:
        return False, (
            f"held-out hit@1 {cold.hit_at_1:.3f} cold, {after.hit_at_1:.3f} with it: the gain "
            f"{gain:+.3f} has a {1 - SIGNIFICANCE:.0%} interval from {low:+.3f}: it may be a loss"
        )
    wins = sum(a and not b for a, b in zip(after.hit, before.hit, strict=True))
    losses = sum(b and not a for a, b in zip(after.hit, before.hit, strict=True))
    if before is not cold and wins <= losses:
        return False, (
            f"held-out hit@1 {after.hit_at_1:.3f}, the serving model {before.hit_at_1:.3f}: "
            f"{wins} steps won, {losses} lost; it does not beat it"
        )
    lost = max(unseen_loss(cold, after), unseen_loss(others.champion, others.challenger))
    if lost > MAX_UNSEEN_LOSS:
        return False, f"held-out steps of tools it does not move lose {lost:.3f} of hit@1"
    agreed = f"{others.wins:.1f} won, {others.losses:.1f} lost, trust_keys {needed}"
    if harmed({"": (others.wins, others.losses)}):
        lose = "the routes of other keys would lose what the cold ranking gave them"
        return False, f"{lose} ({agreed})"
    hurt = harmed(held.votes(after, cold))
    if hurt:
        return False, f"the routes of {len(hurt)} reporting key(s) would lose held-out steps"
    reach = (
        "every key's routes: other keys agree"
        if others.shared
        else "only the routes of the key that alone reported a tool: other keys do not agree"
    )
    return True, (
        f"held-out hit@1 {cold.hit_at_1:.3f} cold -> {after.hit_at_1:.3f} (gain {gain:+.3f}, "
        f"interval from {low:+.3f}; against the serving {before.hit_at_1:.3f}: {wins} won, "
        f"{losses} lost); it moves {reach} ({agreed})"
    )
