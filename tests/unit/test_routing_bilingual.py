"""Steps in one language, cards in another: the aims of issue 17 (part 4) with the real models.

``tests/data/bilingual``: the demo catalog (35 English cards, 5 Chinese ones that are
look-alikes of English ones) plus 4 Chinese cards, and 129 steps — 45 Chinese steps for
English cards, 42 English steps for Chinese cards, 22 mixing both scripts, 10 + 10
same-language controls — written before looking at the router's answers, all kept.

Measured the way ``toolreach eval --data tests/data/bilingual`` measures (the same function):
hit@1 0.806 (aim ≥ 0.80, met), recall@3 0.922 (aim ≥ 0.95, **not met**). Before the
per-pair weighting (app/routing/language.py) they were 0.558 and 0.830. The steps still
outside the top 3 (``python bench/by_kind.py --data tests/data/bilingual --misses 3``):
zh-en-02 and mixed-02 ("给张三发邮件说会议改到下午三点": the multilingual encoder itself reads a
meeting step), zh-en-07, -14, -19, -20, mixed-15, -21 (ranked low by the multilingual cosine
too; the Chinese card book_meeting_room draws steps about meetings), en-zh-24 and -26
(request_fapiao's four required parameters cost it up to 0.3 in the rule check).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.cli.evaluate import evaluate
from app.settings import Settings

pytestmark = pytest.mark.model
DATA = Path(__file__).resolve().parents[1] / "data" / "bilingual"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``toolreach eval`` on the bilingual set with the service's default encoder."""
    url = f"sqlite:///{tmp_path_factory.mktemp('bilingual')}/unused.db"
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    return evaluate(DATA, settings)


def test_the_set_is_what_the_docstring_says(report: dict[str, Any]) -> None:
    assert report["tools"] == 44 and report["queries"] == 129
    assert report["queries_naming_unregistered_tools"] == 0
    assert report["model"].endswith("universal-sentence-encoder-multilingual-3@0.4")


def test_hit_at_1_keeps_what_was_measured(report: dict[str, Any]) -> None:
    """0.798 measured with missing_required read by value (0.806 before it; 0.558 before the
    per-pair weighting)."""
    assert report["results"]["full"]["hit@1"] >= 0.79


@pytest.mark.xfail(strict=True, reason="hit@1 0.798 < 0.80 since the rule check reads values")
def test_hit_at_1_reaches_the_aim(report: dict[str, Any]) -> None:
    assert report["results"]["full"]["hit@1"] >= 0.80


def test_recall_at_3_keeps_what_was_measured(report: dict[str, Any]) -> None:
    """0.922 measured; before the per-pair weighting, 0.830."""
    assert report["results"]["full"]["recall@3"] >= 0.92


@pytest.mark.xfail(strict=True, reason="recall@3 0.922 < 0.95: misses in the module docstring")
def test_recall_at_3_reaches_the_aim(report: dict[str, Any]) -> None:
    assert report["results"]["full"]["recall@3"] >= 0.95


def test_the_full_pipeline_beats_keywords_alone(report: dict[str, Any]) -> None:
    """BM25 cannot cross scripts: fused must stay well above it (0.806 against 0.450)."""
    results = report["results"]
    assert results["full"]["hit@1"] >= results["keyword_only"]["hit@1"] + 0.25
