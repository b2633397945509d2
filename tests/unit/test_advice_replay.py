"""The card doctor's pure parts: stable ids, clean words."""

from __future__ import annotations

from app.advice import service
from app.advice.doctor import Change, clean_words, finding_id
from app.advice.replay import Replay


def test_ids_are_stable_and_words_clean() -> None:
    change = [Change("a", "description", "x")]
    assert finding_id("confusion", ("a", "b"), change) == finding_id(
        "confusion", ["a", "b"], change
    )
    assert clean_words("<b>hi</b> [x](http://e.x) `rm` ok") == ["hi", "ok"]


def test_a_finding_must_fix_a_held_out_step() -> None:
    """The time split: with enough reported steps the newest are held out of the findings,
    and an edit that fixes only the steps it was made from is refused."""
    assert service.held_out(1044) == 209 and service.held_out(20) == 0
    assert Replay(100, 3, 0, 3, held_fixed=0).refused() == "fixed_no_held_out"
    assert Replay(100, 3, 0, 3, held_fixed=1).offered()
    assert Replay(5, 1, 0, 1).offered()  # too few steps to split: no held-out count
