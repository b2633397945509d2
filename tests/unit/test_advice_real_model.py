"""The issue's "Done when", with the real model: a namespace of look-alike customer tools
where most order questions go to the card that mentions "order count" (tests/data/doctor/).
The steps are reported, every advice the replay offers is applied, and then: at least half
of the reported misroutes and half of the unseen paraphrases are fixed, and every step that
was right stays right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.advice.finding import Case, Change, edited
from app.advice.replay import firsts, heal, replay
from app.embedding.encoders import Encoder, make_encoder
from app.routing import RouterConfig, RouterIndex, embedding_text
from app.tools.catalog import card_to_doc
from registry.card import ToolCard

DATA = Path(__file__).parent.parent / "data" / "doctor"


def rows(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return make_encoder("minilm")


def hits(index: RouterIndex, encoder: Encoder, items: list[dict[str, str]]) -> list[bool]:
    got = firsts(index, encoder, [r["query"] for r in items])
    return [g == r["chosen"] for g, r in zip(got, items, strict=True)]


def test_applied_advice_fixes_half_and_breaks_nothing(encoder: Encoder) -> None:
    cards = {c["name"]: ToolCard(**c) for c in json.loads((DATA / "tools.json").read_text())}
    docs = [card_to_doc(cards[n]) for n in sorted(cards)]
    index = RouterIndex.build(
        docs, encoder.encode([embedding_text(d) for d in docs]), RouterConfig()
    )
    reported, unseen, right = rows("reported"), rows("paraphrases"), rows("right")
    before = {name: hits(index, encoder, items) for name, items in
              (("reported", reported), ("unseen", unseen), ("right", right))}  # fmt: skip
    misroutes = before["reported"].count(False)
    assert misroutes >= 8 and before["unseen"].count(False) >= 5 and all(before["right"])

    cases = [Case(r["query"], "", r["chosen"]) for r in reported]
    healed, _, applied, _ = heal(index, cards, encoder, cases)
    assert applied
    after = {name: hits(healed, encoder, items) for name, items in
             (("reported", reported), ("unseen", unseen), ("right", right))}  # fmt: skip
    fixed = sum(not b and a for b, a in zip(before["reported"], after["reported"], strict=True))
    fixed_unseen = sum(not b and a for b, a in zip(before["unseen"], after["unseen"], strict=True))
    # The aim is half (docs/ROUTING.md, "The card doctor": 11 of 20).
    assert fixed >= misroutes / 2, (fixed, misroutes)
    assert fixed_unseen >= before["unseen"].count(False) / 2, (fixed_unseen, after["unseen"])
    assert all(after["right"])
    broken = sum(b and not a for b, a in zip(before["reported"], after["reported"], strict=True))
    assert broken == 0


def test_an_edit_that_only_wins_usage_is_refused(encoder: Encoder) -> None:
    """The gaming case (issue 31): broad words and other tools' wording added to one card fix
    the reported order steps but take steps reported, successfully, for other tools. The
    replay checks those too, counts them broken, and refuses the edit."""
    cards = {c["name"]: ToolCard(**c) for c in json.loads((DATA / "tools.json").read_text())}
    docs = [card_to_doc(cards[n]) for n in sorted(cards)]
    index = RouterIndex.build(
        docs, encoder.encode([embedding_text(d) for d in docs]), RouterConfig()
    )
    reported, right = rows("reported"), rows("right")
    cases = [Case(r["query"], "", r["chosen"]) for r in [*reported, *right]]
    greedy = cards["customer_purchases"]
    broad = (
        f"{greedy.description} Anything about a customer: orders, account, loyalty tier, "
        "phone, address, email, payments and refunds, parcels, shipments and tracking, "
        "products and the catalog."
    )
    changes = [
        Change("customer_purchases", "description", broad),
        Change("customer_purchases", "examples", [r["query"] for r in right]),
    ]
    result = replay(index, encoder, cases, edited(cards, changes))
    assert result.checked == len(reported) + len(right)
    assert result.fixed >= 1, result  # it does fix reported steps ...
    assert result.broken >= 1 and result.won > result.fixed, result  # ... by taking others'
    assert not result.offered()


def test_a_handful_of_misroutes_from_several_keys(encoder: Encoder) -> None:
    """Issue 42 item 17: ten cards, two overlapping customer tools, fourteen reports from
    three keys, five of them misroutes ("show the orders of customer 1042" to get_customer).
    With the ranking the issue ran on (no values or action votes) and with today's, the
    doctor proposes a checked edit that fixes some of the five and breaks none. (Before a
    plural object made a step a list, get_customer's "get" agreed with "show the orders"
    better than any card text could answer, and the doctor proposed nothing.)"""
    from app.advice.service import Budget, compute
    from app.tools.live_index import Snapshot

    cards = {c["name"]: ToolCard(**c) for c in json.loads((DATA / "tools.json").read_text())}
    for name, text in [
        ("send_email", "Send an email message to one address."),
        ("translate_text", "Translate text between languages."),
        ("convert_currency", "Convert money between currencies at today's rate."),
        ("get_weather", "Current weather for a city."),
    ]:
        cards[name] = ToolCard(name=name, description=text)
    orders = [r for r in rows("reported") if r["chosen"] == "customer_purchases"]
    others = [r for r in rows("reported") if r["chosen"] != "customer_purchases"][:8]
    plain = RouterConfig(values_weight=0, action_weight=0)
    for config in (plain, RouterConfig()):
        docs = [card_to_doc(cards[n]) for n in sorted(cards)]
        index = RouterIndex.build(docs, encoder.encode([embedding_text(d) for d in docs]), config)
        got = firsts(index, encoder, [r["query"] for r in orders])
        wrong = [r for r, g in zip(orders, got, strict=True) if g != r["chosen"]][:5]
        right = [r for r, g in zip(orders, got, strict=True) if g == r["chosen"]][:1]
        reports = [*wrong, *right, *others]
        assert len(reports) == 14
        firsts_now = firsts(index, encoder, [r["query"] for r in reports])
        cases = [
            Case(r["query"], f or "", r["chosen"], True, f"key-{i % 3}")
            for i, (r, f) in enumerate(zip(reports, firsts_now, strict=True))
        ]
        advice = compute(Snapshot(index, cards), encoder, "shop", (cases, {}), 3, Budget(120))
        [finding] = advice.findings
        assert finding.tools == ("get_customer", "customer_purchases"), finding
        assert finding.replay["fixed"] >= 1 and finding.replay["broken"] == 0, finding.replay
