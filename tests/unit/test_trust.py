"""Bounded influence, hand-computed (app/loop/trust.py, and its use in the prior and memory)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from app.loop.memory import RememberedStep, build_memory
from app.loop.prior import keyed_priors, saturate
from app.loop.trust import (
    ANONYMOUS,
    Report,
    Use,
    agreement,
    distinct_uses,
    evidence_key,
    shared_weights,
)

NOW = datetime(2026, 12, 2, tzinfo=UTC)


def use(tool: str, step: str, key: str, outcome: str = "success") -> Use:
    return Use("ns", tool, outcome, step, key, NOW)


def test_agreement_grows_with_keys_up_to_one() -> None:
    assert [agreement(n, 3) for n in range(5)] == [0.0, 1 / 3, 2 / 3, 1.0, 1.0]
    assert agreement(1, 1) == 1.0  # trust_keys 1: every report counts for every key


def test_whose_evidence_a_report_is() -> None:
    assert evidence_key("k1", "k2") == "k1"  # the reporting key
    assert evidence_key(None, "k2") == "k2"  # the gateway's call: the key that routed
    assert evidence_key(None, None) == ANONYMOUS


def test_a_flood_is_one_use() -> None:
    flood = [use("t", "s", "a")] * 20 + [use("t", "s", "b")]
    assert len(distinct_uses(flood)) == 2


def test_the_trainers_sample_weights() -> None:
    reports = [Report("t", "s", "a")] * 5 + [Report("t", "s", "b"), Report("u", "s", "a")]
    assert shared_weights(reports, 3) == {("t", "s"): 2 / 3, ("u", "s"): 1 / 3}


def test_prior_full_for_its_own_key_shared_by_agreement_for_others() -> None:
    uses = [use("t", f"s{i}", "a") for i in range(4)] + [use("t", "x", "a")] * 10
    shared, own = keyed_priors(uses, NOW, 14.0, needed=3)
    assert shared["ns"]["t"] == pytest.approx(saturate(5 / 3))  # 5 distinct steps, 1 key
    assert own[("ns", "a")]["t"] == pytest.approx(saturate(5))
    confirmed = [*uses, use("t", "y", "b"), use("t", "z", "c")]
    shared, own = keyed_priors(confirmed, NOW, 14.0, needed=3)
    assert shared["ns"]["t"] == pytest.approx(saturate(7)) and own == {}


def step(tool: str, text: str, keys: set[str]) -> RememberedStep:
    return RememberedStep(tool, text, 1.0, len(keys), "r", NOW, frozenset(keys))


def test_memory_shared_by_agreement_own_steps_whole() -> None:
    steps = [step("t", "one", {"a"}), step("u", "two", {"a", "b", "c"})]
    built = build_memory(steps, np.eye(2, 4, dtype=np.float32), dims=0, needed=3)
    assert built.memory is not None
    assert built.memory.weights.tolist() == pytest.approx([1 / 3, 1.0])
    assert set(built.own) == {"a"}  # b and c have only confirmed steps
    assert built.own["a"].tools == ("t",) and built.own["a"].weights.tolist() == [1.0]
