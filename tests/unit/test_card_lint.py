"""The lint of a card (registry/lint.py): each code on a card made to show it, none on a
good card."""

from __future__ import annotations

from typing import Any

from registry.card import ToolCard
from registry.lint import lint

GOOD: dict[str, Any] = {
    "name": "get_weather",
    "description": (
        "Current temperature, wind and rain for a city right now. Not for forecasts: use "
        "get_forecast."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city's name"},
            "units": {"type": "string", "enum": ["metric", "imperial"], "description": "one of"},
        },
        "required": ["city"],
    },
    "errors": [{"code": "not_found", "meaning": "no such city", "suggestion": "check spelling"}],
}


def codes(**overrides: Any) -> list[str]:
    return [w.code for w in lint(ToolCard(**{**GOOD, **overrides}), overrides.pop("_", ()))]


def test_a_good_card_has_no_warning() -> None:
    assert lint(ToolCard(**GOOD), ["get_forecast"]) == []


def test_purpose_beyond_the_name() -> None:
    assert codes(description="Get weather.") == ["purpose_missing"]


def test_no_when_not_only_while_a_lookalike_stands_close() -> None:
    card = ToolCard(**{**GOOD, "description": "Current temperature, wind and rain for a city."})
    assert lint(card) == []
    assert [w.code for w in lint(card, ["fetch_weather"])] == ["no_when_not"]
    named = ToolCard(**{**GOOD, "description": "Weather for a city; see fetch_weather too."})
    assert lint(named, ["fetch_weather"]) == []


def test_required_parameters_need_description_and_type() -> None:
    props = {"city": {}, "day": {"type": "string"}}
    params = {"type": "object", "properties": props, "required": ["city", "day"]}
    found = lint(ToolCard(**{**GOOD, "parameters": params}))
    assert [w.code for w in found] == ["param_undocumented", "param_undocumented"]
    assert "no description and no type" in found[0].message


def test_enum_hidden_in_prose() -> None:
    props = {"units": {"type": "string", "description": "one of metric, imperial"}}
    params = {"type": "object", "properties": props}
    assert codes(parameters=params) == ["enum_in_prose"]
    piped = {"units": {"type": "string", "description": "metric | imperial | kelvin"}}
    assert codes(parameters={"type": "object", "properties": piped}) == ["enum_in_prose"]


def test_error_table_without_suggestions() -> None:
    found = lint(ToolCard(**{**GOOD, "errors": [{"code": "x", "meaning": "bad"}]}))
    assert [w.code for w in found] == ["error_no_suggestion"]
    assert all(w.dimension for w in found)
