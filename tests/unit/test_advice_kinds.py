"""The miss and parameter kinds of advice (app/advice/kinds.py), with the deterministic fake
encoder: a used tool the route never offered gets the steps on its own card; a used tool the
penalty sank (a twin card that differs only in a required parameter) gets that parameter's
description naming the steps' value; each is replayed and offered, and fixes its steps."""

from __future__ import annotations

from typing import Any

import pytest

from app.advice.finding import Case, edited
from app.advice.kinds import findings, parameter_change
from app.advice.replay import firsts, heal, observed, replay
from app.advice.standing import Standing, kind_of, sunk_by_penalty
from app.embedding.encoders import Encoder, make_encoder
from app.routing import RouterConfig, RouterIndex, embedding_text
from app.routing.penalty import check_parameters, compile_rules, step_offer
from app.routing.text import analyse
from app.tools.catalog import card_to_doc
from registry.card import ToolCard

TWIN = "The weather forecast for a city, now or days ahead."
# No description: each card embeds `days` by its name alone, required or not (embedding_text).
DAYS: dict[str, Any] = {"days": {"type": "integer"}}
CARDS = [
    # Twins: the same words, one requires `days`, which "weekly" steps do not give.
    ToolCard(
        name="weather_forecast",
        description=TWIN,
        parameters={"type": "object", "properties": DAYS, "required": ["days"]},
    ),
    ToolCard(
        name="weather.forecast", description=TWIN, parameters={"type": "object", "properties": DAYS}
    ),
    ToolCard(name="send_email", description="Send an email message to one address."),
    ToolCard(name="list_orders", description="The purchases a shopper made, with totals."),
    ToolCard(name="track_parcel", description="Where a parcel is, by its tracking number."),
    ToolCard(name="fx_rates", description="Exchange rates between two currencies."),
    ToolCard(name="translate", description="Translate text into another language."),
]
STEPS = [
    ("weekly weather forecast", "weather_forecast"),
    ("the weather forecast this weekly", "weather_forecast"),
    ("weather forecast now", "weather.forecast"),
    ("dollar to yen conversion", "fx_rates"),
    ("how many yen is a dollar", "fx_rates"),
    ("send an email to bob", "send_email"),
    ("where is my parcel", "track_parcel"),
]


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return make_encoder("fake")


def build(encoder: Encoder, cards: dict[str, ToolCard]) -> RouterIndex:
    docs = [card_to_doc(cards[n]) for n in sorted(cards)]
    return RouterIndex.build(
        docs, encoder.encode([embedding_text(d) for d in docs]), RouterConfig()
    )


@pytest.fixture(scope="module")
def shop(encoder: Encoder) -> tuple[dict[str, ToolCard], RouterIndex, list[Case]]:
    cards = {c.name: c for c in CARDS}
    return cards, build(encoder, cards), [Case(q, "", t) for q, t in STEPS]


def listed(encoder: Encoder, shop: Any, k: int = 1) -> tuple[list[Any], list[Case], list[Any]]:
    """The findings of the steps as a route of ``k`` candidates records them, each with its
    replay, and the steps' first tools before."""
    cards, index, cases = shop
    now, stands = observed(index, encoder, cases, k=k)
    before = firsts(index, encoder, [c.query for c in now])
    out = []
    for finding in findings(cards, now, None, stands)[0]:
        out.append((finding, replay(index, encoder, now, edited(cards, finding.changes), before)))
    return out, now, before


def test_a_miss_puts_the_steps_on_the_used_card_only(encoder: Encoder, shop: Any) -> None:
    found, now, _ = listed(encoder, shop)
    assert [c.offered for c in now if c.chosen == "fx_rates"] == [False, False]
    [(miss, result)] = [(f, r) for f, r in found if f.kind == "miss"]
    assert miss.tools[1] == "fx_rates" and miss.cases == 2
    assert {(c.tool, c.field) for c in miss.changes} == {
        ("fx_rates", "examples"),
        ("fx_rates", "description"),
    }
    assert "never offered fx_rates" in miss.diagnosis
    assert "kept out by a lower cosine" in miss.diagnosis and "lacks" in miss.diagnosis
    assert result.offered() and result.fixed == 2 and result.broken == 0


def test_the_penalty_sinking_the_used_tool_is_a_parameter_finding(
    encoder: Encoder, shop: Any
) -> None:
    found, _, before = listed(encoder, shop)
    assert before[:3] == ["weather.forecast"] * 3
    [(finding, result)] = [(f, r) for f, r in found if f.kind == "parameter"]
    assert finding.tools == ("weather.forecast", "weather_forecast")
    assert "penalty stage sank weather_forecast" in finding.diagnosis
    assert "required days" in finding.diagnosis
    [change] = finding.changes
    assert (change.tool, change.field) == ("weather_forecast", "parameters")
    assert change.value["required"] == ["days"]  # never made optional
    assert change.value["properties"]["days"]["description"].endswith("(e.g. weekly)")
    assert result.offered() and result.fixed == 2 and result.broken == 0
    # the rule check itself now reads the step's "weekly" as the value
    step = "weekly weather forecast"
    rules = compile_rules(change.value, "weather_forecast")
    assert check_parameters(rules, step_offer(step, analyse(step), None)).missing == ()


def test_heal_applies_both_kinds_and_breaks_nothing(encoder: Encoder, shop: Any) -> None:
    cards, index, cases = shop
    before = firsts(index, encoder, [c.query for c in cases])
    healed, _, applied, _ = heal(index, cards, encoder, cases)
    after = firsts(healed, encoder, [c.query for c in cases])
    assert {f.kind for f in applied} >= {"parameter"}
    for case, was, now in zip(cases, before, after, strict=True):
        assert now == case.chosen or was != case.chosen, (case, was, now)
    assert sum(a == c.chosen for a, c in zip(after, cases, strict=True)) > sum(
        b == c.chosen for b, c in zip(before, cases, strict=True)
    )


def test_kinds_by_standing() -> None:
    first = {"keyword": 0.3, "embedding": 0.7, "penalty": 0.0}
    sunk = Standing(2, {"keyword": 0.3, "embedding": 0.7, "penalty": -0.1}, ("days",), "b", first)
    weak = Standing(2, {"keyword": 0.1, "embedding": 0.5, "penalty": -0.1}, ("days",), "b", first)
    assert sunk_by_penalty(sunk) and not sunk_by_penalty(weak)
    assert kind_of(Case("q", "b", "a", offered=True), sunk) == "parameter"
    assert kind_of(Case("q", "b", "a", offered=False), weak) == "miss"
    assert kind_of(Case("q", "b", "a", offered=False), None) == "miss"
    assert kind_of(Case("q", "b", "a"), weak) == "confusion"
    assert not sunk_by_penalty(Standing(None, {}, (), "b", first))


def test_a_step_with_no_value_words_gets_the_context_line() -> None:
    card = CARDS[0]
    change = parameter_change(card, "days", [])
    assert change is not None
    text = change.value["properties"]["days"]["description"]
    assert text.endswith("pass it in the route's context as days.")
    assert change.value["required"] == ["days"]
