"""The card doctor's pure parts: stable ids, clean words."""

from __future__ import annotations

from app.advice.doctor import Change, clean_words, finding_id


def test_ids_are_stable_and_words_clean() -> None:
    change = [Change("a", "description", "x")]
    assert finding_id("confusion", ("a", "b"), change) == finding_id(
        "confusion", ["a", "b"], change
    )
    assert clean_words("<b>hi</b> [x](http://e.x) `rm` ok") == ["hi", "ok"]
