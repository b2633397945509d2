"""The card doctor's pure parts: stable ids, clean words."""

from __future__ import annotations

import pytest

from app.advice import doctor, service
from app.advice.doctor import Change, clean_words, finding_id
from app.advice.replay import Replay
from registry.card import ToolCard


def test_ids_are_stable_and_words_clean() -> None:
    change = [Change("a", "description", "x")]
    assert finding_id("confusion", ("a", "b"), change) == finding_id(
        "confusion", ["a", "b"], change
    )
    assert clean_words("<b>hi</b> [x](http://e.x) `rm` ok") == ["hi", "ok"]


def test_a_finding_must_fix_a_held_out_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The time split (off by default, ``HELD_OUT_SHARE`` 0): with enough reported steps the
    newest are held out of the findings, and an edit that fixes only the steps it was made
    from is refused."""
    assert service.held_out(1044) == 0
    monkeypatch.setattr(service, "HELD_OUT_SHARE", 0.2)
    assert service.held_out(1044) == 209 and service.held_out(20) == 0
    assert Replay(100, 3, 0, 3, held_fixed=0).refused() == "fixed_no_held_out"
    assert Replay(100, 3, 0, 3, held_fixed=1).offered()
    assert Replay(5, 1, 0, 1).offered()  # too few steps to split: no held-out count


def test_what_a_confusion_writes_on_the_wrong_card(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NOT_FOR``: the steps' words on the wrong card, the used tool's name only (the
    default), or nothing there (docs/BENCHMARKS.md, "What loses the held-out hits")."""
    right = ToolCard(name="list_orders", description="The purchases a shopper made.")
    wrong = ToolCard(name="customer_profile", description="A profile with the order count.")
    steps = ["show the orders of customer 12", "which orders did customer 7 place"]
    lines = {}
    for mode in ("words", "name", "none"):
        monkeypatch.setattr(doctor, "NOT_FOR", mode)
        changes = doctor.changes_for(steps, right, wrong)
        assert changes[0] == Change(
            "list_orders", "examples", [doctor.example_of(s) for s in steps]
        )
        lines[mode] = [c.value for c in changes if c.tool == "customer_profile"]
    assert lines["words"] == [f"{wrong.description} Not for customer show place: use list_orders."]
    assert lines["name"] == [f"{wrong.description} Not for these requests: use list_orders."]
    assert lines["none"] == []
