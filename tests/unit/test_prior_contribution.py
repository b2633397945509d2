"""The prior's part of a route (``signals.prior_contribution``): a read-only prior, as the caches
hand out, is turned into arrays once per index; the part is the same as the plain loop's."""

from __future__ import annotations

import gc
import math
from types import MappingProxyType

import numpy as np

from app.routing import RouterConfig, RouterIndex, ToolDoc, signals
from app.routing.signals import prior_contribution

CONFIG = RouterConfig()
DOCS = [ToolDoc(f"tool_{i}", f"Tool number {i}.", f"Does thing {i}.") for i in range(50)]


def index() -> RouterIndex:
    return RouterIndex.build(DOCS, np.eye(len(DOCS), 8, dtype=np.float32), CONFIG)


def looped(index: RouterIndex, prior: dict[str, float]) -> np.ndarray:
    """The part as one loop over the prior computes it (the definition)."""
    boost = np.zeros(len(index))
    for name, value in prior.items():
        position = index.positions.get(name)
        if position is not None and math.isfinite(value):
            boost[position] = CONFIG.prior_weight * min(max(value, 0.0), CONFIG.prior_cap)
    return boost


class CountingDict(dict[str, float]):
    """Counts how often its items are read."""

    reads = 0

    def items(self):  # type: ignore[no-untyped-def, override]
        CountingDict.reads += 1
        return super().items()


def test_the_part_equals_the_loop_for_any_prior() -> None:
    built = index()
    rng = np.random.default_rng(3)
    prior = {
        f"tool_{i}": float(v)
        for i, v in zip(range(0, 50, 3), rng.uniform(-0.5, 1.5, 17), strict=True)
    }
    prior |= {"not_a_tool": 0.9, "tool_1": math.nan, "tool_2": math.inf}
    for given in (prior, MappingProxyType(prior)):
        assert np.array_equal(prior_contribution(built, given, CONFIG), looped(built, prior))
    assert (
        not prior_contribution(built, None, CONFIG).any()
        and not prior_contribution(built, {}, CONFIG).any()
    )


def test_a_read_only_prior_is_read_once_per_index_and_dropped_with_it() -> None:
    built = index()
    prior = MappingProxyType(CountingDict({"tool_4": 0.5, "tool_9": 0.2}))
    CountingDict.reads = 0
    parts = [prior_contribution(built, prior, CONFIG) for _ in range(5)]
    assert CountingDict.reads == 1
    assert all(np.array_equal(part, looped(built, dict(prior))) for part in parts)
    parts[0][4] = 7.0  # each call's array is the caller's own
    assert prior_contribution(built, prior, CONFIG)[4] == CONFIG.prior_weight * 0.5
    other = index()  # another snapshot's index: read anew
    prior_contribution(other, prior, CONFIG)
    assert CountingDict.reads == 2
    assert built in signals._PRIOR_MEMO
    del built, other, parts
    gc.collect()
    assert len(signals._PRIOR_MEMO) == 0
