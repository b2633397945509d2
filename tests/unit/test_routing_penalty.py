"""Rule check: when can the query or the context supply a required parameter."""

from __future__ import annotations

from typing import Any

import pytest

from app.routing.penalty import compile_rules, missing_required, penalty, query_evidence
from app.routing.text import analyse
from app.routing.values import value_kind


def missing(schema: dict[str, Any], query: str, context: dict[str, Any] | None = None) -> tuple:
    return missing_required(compile_rules(schema), query_evidence(query, analyse(query), context))


def one(name: str, **prop: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {name: prop}, "required": [name]}


@pytest.mark.parametrize(
    ("name", "prop", "kind"),
    [
        ("contact_email", {"type": "string"}, "email"),
        ("website_url", {"type": "string"}, "url"),
        ("server_ip", {"type": "string"}, "ip"),
        ("phone_number", {"type": "string"}, "phone"),
        ("startDate", {"type": "string"}, "date"),
        ("when", {"type": "string", "format": "date-time"}, "datetime"),
        ("meeting_time", {"type": "string"}, "time"),
        ("patient_id", {"type": "string"}, "id"),
        ("count", {"type": "integer"}, "number"),
        ("verbose", {"type": "boolean"}, "boolean"),
        ("title", {"type": "string"}, "string"),
        ("message", {"type": "string"}, "text"),
        ("search_query", {"type": "string"}, "text"),
    ],
)
def test_value_kind_from_type_format_and_name(name: str, prop: dict[str, Any], kind: str) -> None:
    assert value_kind(name, prop) == kind


def test_context_key_supplies_it() -> None:
    schema = one("patient_id", type="string")
    assert missing(schema, "show the latest lab results") == ("patient_id",)
    assert missing(schema, "show the latest lab results", {"patientId": "p-9"}) == ()


def test_mentioning_the_name_or_a_synonym_supplies_it() -> None:
    assert missing(one("country", type="string"), "nurses per country please") == ()
    assert missing(one("location", type="string"), "what is on in my city tonight") == ()
    assert missing(one("location", type="string"), "what is on tonight") == ("location",)


def test_enum_and_listed_examples_supply_it() -> None:
    enum = one("unit", type="string", enum=["celsius", "fahrenheit"])
    assert missing(enum, "temperature outside in fahrenheit") == ()
    examples = one("method", type="string", description="Technique (e.g., chromatography, DNA)")
    assert missing(examples, "analyse this sample by chromatography") == ()
    assert missing(examples, "analyse this sample") == ("method",)


@pytest.mark.parametrize(
    ("name", "prop", "query"),
    [
        ("amount", {"type": "number"}, "convert 25 euros"),
        ("start_date", {"type": "string"}, "flights leaving 2024-05-01"),
        ("start_date", {"type": "string"}, "flights leaving next week"),
        ("recipient", {"type": "string", "format": "email"}, "send it to ann@example.com"),
        ("page", {"type": "string", "format": "uri"}, "summarise https://example.org/a"),
        ("host", {"type": "string", "format": "ipv4"}, "ping 10.0.0.7"),
        ("mobile", {"type": "string"}, "text +33 6 12 34 56 78 that I am late"),
        ("order_id", {"type": "string"}, "where is order A7X93K"),
        ("subject", {"type": "string"}, 'open a ticket saying "printer jammed"'),
        ("city", {"type": "string"}, "is it raining in Oslo"),
        ("at", {"type": "string", "format": "date-time"}, "ping me at 5pm"),
        ("at", {"type": "string", "format": "date-time"}, "ping me on Friday"),
        ("message", {"type": "string"}, "tell the team we ship today"),
    ],
)
def test_a_visible_value_of_the_right_kind_supplies_it(
    name: str, prop: dict[str, Any], query: str
) -> None:
    assert missing(one(name, **prop), query) == ()


@pytest.mark.parametrize(
    ("name", "prop", "query"),
    [
        ("amount", {"type": "number"}, "convert some euros"),
        ("order_id", {"type": "string"}, "where is my parcel"),
        ("phone_number", {"type": "string"}, "text my landlord"),
        ("recipient", {"type": "string", "format": "email"}, "send the report"),
        ("start_date", {"type": "string"}, "book a flight"),
        ("title", {"type": "string"}, "make a new document"),
        ("message", {"type": "string"}, "?!"),
    ],
)
def test_no_value_of_the_right_kind_leaves_it_missing(
    name: str, prop: dict[str, Any], query: str
) -> None:
    assert missing(one(name, **prop), query) == (name,)


def test_only_required_parameters_count_and_order_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "b_code": {"type": "string"},
            "a_code": {"type": "string"},
            "note": {"type": "string"},
        },
        "required": ["b_code", "a_code"],
    }
    assert missing(schema, "do it") == ("b_code", "a_code")
    assert missing({}, "do it") == ()


def test_penalty_is_per_parameter_and_capped() -> None:
    assert penalty((), 0.1, 3) == 0.0
    assert penalty(("a", "b"), 0.1, 3) == pytest.approx(-0.2)
    assert penalty(("a", "b", "c", "d", "e"), 0.1, 3) == pytest.approx(-0.3)


def test_a_word_the_card_does_not_explain_supplies_only_plain_strings() -> None:
    query = "mass transfer rate for ethanol"
    evidence = query_evidence(query, analyse(query), None)
    substance = compile_rules(one("substance", type="string"))
    assert missing_required(substance, evidence) == ("substance",)
    assert missing_required(substance, evidence, unexplained=True) == ()
    order = compile_rules(one("order_id", type="string"))
    assert missing_required(order, evidence, unexplained=True) == ("order_id",)


def test_ordinal_dates_count_as_dates() -> None:
    assert missing(one("date", type="string"), "check the schedule for May 30th") == ()
