"""A namespace's training pairs: its remembered steps (app/loop/memory.py) as (step vector,
tool, weight), beside one anchor pair per card (``app.routing.adapter.anchors``).

The steps are query memory's own: the same reports count (successes and validated calls,
not forgotten, made since the tool's current substance), with the same decay, caps and
bounded influence — each at the weight every key sees (``RememberedStep.shared``), since
one adapter serves every key of the namespace. A flood of identical reports is one step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.loop.memory import RememberedStep
from app.routing.adapter import Pairs, anchors, joined
from app.routing.index import RouterIndex
from app.routing.signals import unit_rows

ANCHOR_WEIGHT = 1.0  # a card's own pair weighs like one report


def step_pairs(
    index: RouterIndex, steps: Sequence[RememberedStep], vectors: np.ndarray, needed: int
) -> tuple[Pairs, list[int]]:
    """The pairs of the ``steps`` whose tool is in ``index`` (``vectors``: one row each, as a
    route embeds the step), and which of ``steps`` they are."""
    picked = [i for i, s in enumerate(steps) if s.tool in index.positions and s.shared(needed) > 0]
    dim = index.embeddings.shape[1]
    if not picked:
        return Pairs(
            np.zeros((0, dim), np.float32), np.zeros(0, np.int64), np.zeros(0, np.float32)
        ), []
    rows = unit_rows(np.asarray(vectors, dtype=np.float32)[picked], len(picked), dim)
    assert rows is not None
    tools = np.array([index.positions[steps[i].tool] for i in picked], dtype=np.int64)
    weights = np.array([steps[i].shared(needed) for i in picked], dtype=np.float32)
    return Pairs(rows, tools, weights), picked


def training_pairs(
    index: RouterIndex, steps: Sequence[RememberedStep], vectors: np.ndarray, needed: int
) -> tuple[Pairs, frozenset[str]]:
    """Every pair an adapter of this namespace is trained on, and the tools with reports."""
    reported, picked = step_pairs(index, steps, vectors, needed)
    tools = frozenset(steps[i].tool for i in picked)
    return joined(reported, anchors(index.embeddings, ANCHOR_WEIGHT)), tools
