"""The usage prior: hand-computed values, decay, saturation, cold start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.loop.prior import SATURATION, decay, saturate, usage_priors
from app.loop.repository import UsageRow

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def row(
    chosen: str, outcome: str, count: int, days_ago: float = 0, ns: str = "default"
) -> UsageRow:
    return UsageRow(ns, chosen, outcome, NOW - timedelta(days=days_ago), count)


def test_hand_computed_priors() -> None:
    rows = [
        row("a", "success", 5),  # 5 uses → 5 / (5 + 5) = 0.5
        row("a", "error", 10),  # errors add nothing
        row("b", "unknown", 4, days_ago=14),  # 4 × 0.5 × 0.5 = 1 → 1 / 6
        row("c", "error", 3),  # only errors: no prior at all
        row("a", "success", 1, ns="other"),  # 1 / 6, in its own namespace
    ]
    priors = usage_priors(rows, NOW, half_life_days=14)
    assert priors == {
        "default": {"a": pytest.approx(0.5), "b": pytest.approx(1 / 6)},
        "other": {"a": pytest.approx(1 / 6)},
    }


def test_cold_start_is_no_prior() -> None:
    assert usage_priors([], NOW, half_life_days=14) == {}


def test_decay_and_saturation() -> None:
    assert decay(0, 7) == 1.0 and decay(7, 7) == 0.5 and decay(21, 7) == 0.125
    assert decay(-1, 7) == 1.0  # a clock a little ahead never boosts
    assert saturate(SATURATION) == 0.5
    assert 0.99 < saturate(1000) < 1.0  # bounded however popular a tool is
