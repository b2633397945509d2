"""`toolreach eval`'s completeness (app/cli/completeness.py), computed by hand."""

from __future__ import annotations

from app.cli.completeness import all_at, completeness, format_completeness, step_scores


def test_all_at_k_needs_every_tool_in_the_top_k() -> None:
    ranked = ["a", "x", "b", "y", "c"]
    assert all_at(ranked, frozenset({"a", "b"}), 3) == 1.0
    assert all_at(ranked, frozenset({"a", "c"}), 3) == 0.0
    assert all_at(ranked, frozenset({"a", "c"}), 5) == 1.0


def test_a_single_tool_step_is_scored_by_hit_at_1_and_a_several_tool_one_by_recall_and_all() -> (
    None
):
    assert step_scores(["a", "b"], frozenset({"b"})) == {"hit@1": 0.0}
    several = step_scores(["a", "x", "y", "b"], frozenset({"a", "b"}))
    assert several["recall@3"] == 0.5 and several["all@3"] == 0.0
    assert several["recall@5"] == 1.0 and several["all@5"] == 1.0 and several["all@10"] == 1.0
    assert "hit@1" not in several


def test_completeness_averages_each_kind_on_its_own() -> None:
    rows = [
        step_scores(["a"], frozenset({"a"})),
        step_scores(["b"], frozenset({"a"})),
        step_scores(["a", "b", "c"], frozenset({"a", "b"})),
        step_scores(["a", "x", "y", "z", "w", "b"], frozenset({"a", "b"})),
    ]
    report = completeness(rows)
    assert report["single"] == {"steps": 2, "hit@1": 0.5}
    assert report["multi"]["steps"] == 2
    assert report["multi"]["all@3"] == 0.5 and report["multi"]["all@5"] == 0.5
    assert report["multi"]["all@10"] == 1.0 and report["multi"]["recall@5"] == 0.75
    lines = format_completeness({"full": report})
    assert lines[0] == "completeness: 2 steps that need one tool, 2 that need several"
    assert lines[2].split()[:3] == ["full", "0.500", "0.750"]


def test_a_set_without_one_kind_shows_dashes() -> None:
    report = completeness([step_scores(["a"], frozenset({"a"}))])
    assert report["multi"] == {"steps": 0, **dict.fromkeys(report["multi"]) | {"steps": 0}}
    assert "-" in format_completeness({"full": report})[2]
