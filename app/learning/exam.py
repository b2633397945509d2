"""The guard's exam: the held-out steps, routed by a model as each key's routes would read
it, and the figures a verdict is made of (app/learning/guard.py).

Each held-out step is answered once per distinct *view* of a model (the tools it moves, and
its calibration): as the key that reported it (its own routes) or as a key that reported
none (everyone else's). A view's answer is its model over the step's cold answer at the
model's depth, which reads neither the model nor the key (``pipeline.reranked``): a step
is routed cold twice in all, at that depth for every view (an answer the trainings routed
already is read, not routed again: ``training.training_rows``' ``routed``) and at ``k`` as
no model serves it, not once a view. Wins and losses are counted per key, a step's split
among the keys that reported it, so that ``trust.key_capped`` can count each key at most
as often as the ``trust_keys``-th busiest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.learning.training import cold_answers
from app.loop.memory import RememberedStep
from app.loop.trust import ANONYMOUS, NOBODY
from app.routing.index import RouterIndex
from app.routing.pipeline import Router, reranked, wide
from app.routing.reranker import DEPTH, Learned
from app.routing.types import Candidate, RouteOptions, RouterConfig
from app.routing.view import NamespaceView

SIGNIFICANCE = 0.05


@dataclass(frozen=True, slots=True)
class Score:
    """How one model routed the held-out steps; *unseen*: the steps whose tool the
    challenger's view does not move (the same steps for the champion and the challenger)."""

    confidence: tuple[float, ...]  # each step's top confidence (0: empty answer)
    hit: tuple[bool, ...]
    unseen_at: tuple[bool, ...] = ()
    spoke: tuple[bool, ...] = ()  # the model's probability, not the cold one, is the top's

    @property
    def steps(self) -> int:
        return len(self.hit)

    @property
    def hits(self) -> int:
        return sum(self.hit)

    @property
    def unseen(self) -> int:
        return sum(self.unseen_at)

    @property
    def unseen_hits(self) -> int:
        return sum(h and u for h, u in zip(self.hit, self.unseen_at, strict=True))

    @property
    def hit_at_1(self) -> float:
        return self.hits / self.steps if self.steps else 0.0

    @property
    def unseen_hit_at_1(self) -> float | None:
        return self.unseen_hits / self.unseen if self.unseen else None

    def seen_by(self, unseen_at: tuple[bool, ...]) -> Score:
        return Score(self.confidence, self.hit, unseen_at, self.spoke)


def sign_test(wins: int, losses: int) -> float:
    """P(at least ``wins`` heads in ``wins + losses`` fair coin tosses)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n


class HeldOut:
    """The held-out steps, one a text (the steps of a text, each of a tool reported for it,
    are one: a top that is any of its tools is right), each routed once per distinct view
    of a model (the tools it moves and its calibration), as its own reporting key or as a
    key that reported none (``NOBODY``) routes it; ``routed``: the trainings' cold answers
    at ``DEPTH`` (step text → answer), read and added to, for the refit's training to read."""

    def __init__(
        self,
        index: RouterIndex,
        steps: Sequence[RememberedStep],
        vectors: np.ndarray,
        positions: Sequence[int],
        config: RouterConfig,
        routed: dict[str, list[Candidate]] | None = None,
    ) -> None:
        self.index, self.steps, self.vectors = index, steps, vectors
        first: dict[str, int] = {}  # a text → its first step: the one routed for the text
        tools: dict[str, set[str]] = {}
        keys: dict[str, set[str]] = {}
        for i in positions:
            text = steps[i].text
            first.setdefault(text, i)
            tools.setdefault(text, set()).add(steps[i].tool)
            keys.setdefault(text, set()).update(steps[i].keys)
        self.positions = list(first.values())
        # each held-out text's reported tools (its right tools) and the keys that reported it
        self.tools = {i: frozenset(tools[steps[i].text]) for i in self.positions}
        self.keys = {i: frozenset(keys[steps[i].text]) for i in self.positions}
        self.router = Router(config)
        self.view = NamespaceView(index)
        self.routed = {} if routed is None else routed
        self._cold: dict[int, dict[int, list[Candidate]]] = {}  # depth → step → cold answer
        self._answers: dict[tuple[object, ...], tuple[bool, float, bool]] = {}
        self._models: dict[int, Learned] = {}  # kept: an answer's ids stay their own

    def key(self, i: int, own: bool) -> str:
        """The key step ``i`` is routed as: one of those that reported it (``own``), or one
        that reported none."""
        return min(self.keys[i], default=ANONYMOUS) if own else NOBODY

    def cold(self, depth: int) -> dict[int, list[Candidate]]:
        """Each held-out step's cold answer, its top ``depth`` (``training.cold_answers``)."""
        if depth not in self._cold:
            shared = self.routed if depth == DEPTH else {}
            texts = [s.text for s in self.steps]
            new = [i for i in self.positions if texts[i] not in shared]
            found = cold_answers(self.router, self.view, texts, self.vectors, new, depth)
            shared.update((texts[i], answer) for i, answer in found.items())
            self._cold[depth] = {i: shared[texts[i]] for i in self.positions}
        return self._cold[depth]

    def answer(self, i: int, model: Learned | None, key: str) -> tuple[bool, float, bool]:
        """Whether ``model`` puts a tool reported for step ``i``'s text first in ``key``'s
        routes, its top confidence, and whether that is the model's (``Learned.rerank``):
        what ``Router.route`` answers (k 3), from the step's one cold answer."""
        moves = frozenset() if model is None else model.for_key(key).moves()
        ranker = None if model is None else id(model.ranker)
        calibration = None if model is None else id(model.calibration)
        at = (i, ranker, moves, calibration)
        if at not in self._answers:
            step, options = self.steps[i], RouteOptions(k=3, key=key)
            if model is None:
                answer = self.cold(options.k)[i]
            else:
                self._models.setdefault(id(model), model)
                cold = self.cold(wide(options, model).k)[i]
                answer = reranked(model.for_key(key), cold, self.vectors[i], step.text, options)
            first = bool(answer) and answer[0].name in self.tools[i]
            spoke = bool(answer) and "learned" in answer[0].stages
            self._answers[at] = (first, answer[0].confidence if answer else 0.0, spoke)
        return self._answers[at]

    def score(self, model: Learned | None, own: bool) -> Score:
        """How ``model`` routes the held-out steps, each as its own reporting key (``own``)
        or as a key that reported none."""
        answers = [self.answer(i, model, self.key(i, own)) for i in self.positions]
        return Score(
            tuple(top for _, top, _ in answers),
            tuple(first for first, _, _ in answers),
            (),
            tuple(spoke for _, _, spoke in answers),
        )

    def unseen(self, challenger: Learned, own: bool) -> tuple[bool, ...]:
        """Which held-out steps ``challenger`` moves none of the reported tools of, in that
        view."""
        return tuple(
            not self.tools[i] & challenger.for_key(self.key(i, own)).moves() for i in self.positions
        )

    def votes(self, after: Score, before: Score) -> dict[str, tuple[float, float]]:
        """Key → (wins, losses) of ``after`` over ``before``: each step's split among the
        keys that reported it."""
        votes: dict[str, tuple[float, float]] = {}
        for i, a, b in zip(self.positions, after.hit, before.hit, strict=True):
            keys = self.keys[i] or frozenset({ANONYMOUS})
            for key in keys:
                w, lost = votes.get(key, (0.0, 0.0))
                votes[key] = (w + (a and not b) / len(keys), lost + (b and not a) / len(keys))
        return votes


def harmed(votes: Mapping[str, tuple[float, float]]) -> list[str]:
    """The keys whose held-out steps lose more than they win, beyond chance."""
    return [
        key
        for key, (w, lost) in votes.items()
        if lost > w and sign_test(round(lost), round(w)) < SIGNIFICANCE
    ]
