"""Bounded influence, hand-computed (app/loop/trust.py, and its use in query memory)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from app.loop.memory import RememberedStep, build_memory, decay
from app.loop.trust import (
    ANONYMOUS,
    Report,
    agreement,
    evidence_key,
    shared_weights,
)

NOW = datetime(2026, 12, 2, tzinfo=UTC)


def test_agreement_grows_with_keys_up_to_one() -> None:
    assert [agreement(n, 3) for n in range(5)] == [0.0, 1 / 3, 2 / 3, 1.0, 1.0]
    assert agreement(1, 1) == 1.0  # trust_keys 1: every report counts for every key


def test_whose_evidence_a_report_is() -> None:
    assert evidence_key("k1", "k2") == "k1"  # the reporting key
    assert evidence_key(None, "k2") == "k2"  # the gateway's call: the key that routed
    assert evidence_key(None, None) == ANONYMOUS


def test_the_trainers_sample_weights() -> None:
    reports = [Report("t", "s", "a")] * 5 + [Report("t", "s", "b"), Report("u", "s", "a")]
    assert shared_weights(reports, 3) == {("t", "s"): 2 / 3, ("u", "s"): 1 / 3}


def step(tool: str, text: str, keys: set[str]) -> RememberedStep:
    return RememberedStep(tool, text, 1.0, len(keys), "r", NOW, frozenset(keys))


def test_memory_shared_by_agreement_own_steps_whole() -> None:
    steps = [step("t", "one", {"a"}), step("u", "two", {"a", "b", "c"})]
    built = build_memory(steps, np.eye(2, 4, dtype=np.float32), dims=0, needed=3)
    assert built.memory is not None
    assert built.memory.weights.tolist() == pytest.approx([1 / 3, 1.0])
    assert set(built.own) == {"a"}  # b and c have only confirmed steps
    assert built.own["a"].tools == ("t",) and built.own["a"].weights.tolist() == [1.0]


def test_decay() -> None:
    assert decay(0, 7) == 1.0 and decay(7, 7) == 0.5 and decay(21, 7) == 0.125
    assert decay(-1, 7) == 1.0  # a clock a little ahead never boosts
