"""Steps that need several tools, with the real models: the aims of issue 30 on
``tests/data/compound``'s held-out steps.

``tests/data/compound``: 44 cards that do not overlap (40 English, 4 Chinese) and 277 steps
— 232 that need 2 or 3 tools (English, Chinese and mixed: "look up the weather in Lyon and
add a reminder…", "查一下明天上海的天气，然后提醒我带伞") and 45 that need one, among them
single requests that must not be cut ("summarise this article in French") — written before
any measurement and split by a hash of the step into ``tune-*`` (132) and ``held-*`` (145);
nothing was tuned on the held-out steps.

Measured the way ``toolreach eval --data tests/data/compound --skip-prefix tune-`` measures
(the same function): all needed tools in the top 5 for 0.878 of the held-out several-tool
steps (aim ≥ 0.85; 0.813 with every step read as one part, 0.837 for the router before
parts, docs/ROUTING.md "Steps of several parts").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.cli.evaluate import evaluate
from app.settings import Settings

pytestmark = pytest.mark.model
DATA = Path(__file__).resolve().parents[1] / "data" / "compound"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``toolreach eval`` on the held-out steps with the service's default encoder."""
    url = f"sqlite:///{tmp_path_factory.mktemp('compound')}/unused.db"
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    return evaluate(DATA, settings, skip_prefix="tune-", no_fit=0)


def test_the_held_out_set_is_what_the_docstring_says(report: dict[str, Any]) -> None:
    assert report["tools"] == 44 and report["queries"] == 145
    assert report["queries_naming_unregistered_tools"] == 0
    full = report["completeness"]["full"]
    assert (full["single"]["steps"], full["multi"]["steps"]) == (22, 123)


def test_all_needed_tools_in_the_top_5_reach_the_aim(report: dict[str, Any]) -> None:
    """0.878 measured."""
    assert report["completeness"]["full"]["multi"]["all@5"] >= 0.85


def test_reading_the_parts_is_what_reaches_it(report: dict[str, Any]) -> None:
    """Every step read as one part (``split: false``): 0.813 and 0.699 at k = 3."""
    full, one = (report["completeness"][v]["multi"] for v in ("full", "one_part"))
    assert one["all@5"] < 0.85
    assert full["all@3"] >= one["all@3"] + 0.08 and full["all@5"] >= one["all@5"] + 0.04


def test_steps_that_need_one_tool_lose_at_most_one(report: dict[str, Any]) -> None:
    """Read as parts, a step of one request loses its action and values votes (a step of
    several parts asks several things: votes.py); of the 22 such steps that costs one (20 → 19
    first), and reading them whole would cost the steps of several requests far more (above)."""
    full, one = (report["completeness"][v]["single"] for v in ("full", "one_part"))
    steps = 22  # the report rounds its shares to 4 decimals
    assert full["hit@1"] >= one["hit@1"] - 1 / steps - 1e-3 and full["hit@1"] >= 0.85
