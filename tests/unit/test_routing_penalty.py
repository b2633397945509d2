"""Rule check: when do the step or the context hold a value for a required parameter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.routing.penalty import (
    ParameterCheck,
    check_parameters,
    compile_rules,
    missing_required,
    penalty,
    step_offer,
)
from app.routing.text import analyse
from app.routing.values import value_kind
from registry.calls import value_problem

DEMO = {
    card["name"]: card
    for card in json.loads(
        (Path(__file__).parents[2] / "app" / "demo" / "catalog.json").read_text()
    )
}


def missing(schema: dict[str, Any], query: str, context: dict[str, Any] | None = None) -> tuple:
    offer = step_offer(query, analyse(query), context)
    return missing_required(compile_rules(schema), offer, value_problem)


def demo(tool: str, query: str, context: dict[str, Any] | None = None) -> ParameterCheck:
    """The rule check's verdict for one demo catalog card, with the service's schema check."""
    card = DEMO[tool]
    rules = compile_rules(card["parameters"], card["name"])
    return check_parameters(rules, step_offer(query, analyse(query), context), value_problem)


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


def test_a_mention_is_not_a_value_but_is_noted_for_the_ranking() -> None:
    assert missing(one("country", type="string"), "nurses per country please") == ("country",)
    location = compile_rules(one("location", type="string"))
    for query, mentioned in (("what is on in my city tonight", ("location",)), ("what is on", ())):
        offer = step_offer(query, analyse(query), None)
        found = check_parameters(location, offer, value_problem)
        assert found == ParameterCheck(missing=("location",), mentioned=mentioned)


# The examples of issue 17: the step names the parameter's noun but holds no value for it.
@pytest.mark.parametrize(
    ("tool", "query", "absent"),
    [
        ("get_order_details", "show me the details of an order", ("order_id",)),
        ("translate_text", "translate this text", ("text", "target_language")),
        ("create_return", "refund the customer for their order", ("order_id", "items", "reason")),
        (
            "issue_refund",
            "refund the customer for their order",
            ("order_id", "amount", "currency", "reason"),
        ),
        ("get_order_details", "order o123", ("order_id",)),  # not ^o[0-9]{6,}$
        ("web_search", "search the web", ("query",)),
        ("summarize_text", "summarize this", ("text",)),
        # The file name's pattern takes any word without a slash: not selective, so "report"
        # is no file name. (Free text takes it as content, a word beyond the request: the
        # rule's known limit.)
        ("upload_file", "upload the report", ("filename",)),
        ("convert_currency", "convert 100 dollars", ("from_currency", "to_currency")),
    ],
)
def test_a_step_that_names_a_parameter_without_a_value_leaves_it_missing(
    tool: str, query: str, absent: tuple[str, ...]
) -> None:
    assert demo(tool, query).missing == absent


@pytest.mark.parametrize(
    ("tool", "query"),
    [
        ("get_order_details", "show me the details of order o100234"),
        ("translate_text", "translate 'good morning' to es"),  # es: a selective pattern's word
        ("translate_text", "translate 'hola' into Spanish"),  # a language, in words
        ("convert_currency", "convert 100 USD to EUR"),
        ("search_help_center", "how do I return an item"),  # free text: the step is the query
        ("web_search", "search the web for the python 3.13 release date"),
        ("get_user_profile", "show the profile of u1042"),
        ("list_events", "what is on my calendar tomorrow"),  # a date in words
        ("fetch_webpage", "read https://example.com/a"),
        ("book_meeting_room", "book a room in shanghai for 8 people tomorrow 3pm to 4pm"),
    ],
)
def test_a_value_that_satisfies_the_schema_is_found(tool: str, query: str) -> None:
    assert demo(tool, query).missing == ()


def test_free_text_is_content_beyond_the_request() -> None:
    assert demo("translate_text", "translate this text to Spanish").missing == ("text",)
    assert demo("translate_text", 'translate "buenos dias"').missing == ("target_language",)


def test_a_context_value_that_breaks_the_schema_does_not_count_and_says_why() -> None:
    found = demo("get_order_details", "show me the order", {"order_id": "banana"})
    assert found.missing == ("order_id",)
    assert found.invalid_context == (("order_id", "'banana' does not match '^o[0-9]{6,}$'"),)
    late = demo("list_events", "my calendar", {"time_min": "tomorrow", "time_max": 3})
    assert late.missing == ("time_min", "time_max")
    assert late.invalid_context == (
        ("time_min", "'tomorrow' is not a 'date-time'"),
        ("time_max", "3 is not of type 'string'"),
    )


def test_the_reason_for_a_long_context_value_is_cut() -> None:
    found = demo("get_order_details", "show me the order", {"order_id": "x" * 100_000})
    (parameter, reason), *_ = found.invalid_context
    assert parameter == "order_id" and len(reason) == 300 and reason.endswith("…")


def test_a_valid_context_value_counts_under_any_spelling_of_its_key() -> None:
    assert (
        demo("get_order_details", "show me the order", {"orderId": "o100234"}) == ParameterCheck()
    )
    items = [{"sku": "SKU-1", "quantity": 1}]
    context = {"order_id": "o100234", "items": items, "reason": "damaged"}
    assert demo("create_return", "return it", context) == ParameterCheck()


def test_the_step_can_supply_what_a_broken_context_value_does_not() -> None:
    found = demo("get_order_details", "order o100234 please", {"order_id": "banana"})
    assert found.missing == ()
    assert [p for p, _ in found.invalid_context] == ["order_id"]


def test_a_context_value_is_checked_against_the_cards_own_definitions() -> None:
    schema = {
        "$defs": {"sku": {"type": "string", "pattern": "^SKU-[0-9]+$"}},
        "type": "object",
        "properties": {"sku": {"$ref": "#/$defs/sku"}, "other": {"$ref": "#/properties/x"}},
        "required": ["sku", "other"],
    }
    rules = compile_rules(schema)
    offer = step_offer("check stock", analyse("check stock"), {"sku": "x", "other": 1})
    found = check_parameters(rules, offer, value_problem)
    assert found.invalid_context == (("sku", "'x' does not match '^SKU-[0-9]+$'"),)
    assert found.missing == ("sku",)  # "other" cannot be checked on its own: accepted


def test_without_a_schema_check_values_are_recognised_by_their_shape() -> None:
    rules = compile_rules(DEMO["get_order_details"]["parameters"], "get_order_details")
    offer = step_offer("order o123", analyse("order o123"), {})
    assert check_parameters(rules, offer).missing == ()
    assert check_parameters(rules, offer, value_problem).missing == ("order_id",)


def test_numeric_ids_are_read_as_numbers() -> None:
    schema = one("user_id", type="integer", minimum=1)
    assert missing(schema, "show user 7") == ()
    assert missing(schema, "show user 0") == ("user_id",)
    assert missing(schema, "show the user") == ("user_id",)


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


def test_a_mention_softens_the_penalty_by_the_share_asked() -> None:
    assert penalty(("a", "b"), 0.1, 3, mentioned=("a",), softening=0.5) == pytest.approx(-0.15)
    assert penalty(("a", "b"), 0.1, 3, mentioned=("a",), softening=1.0) == pytest.approx(-0.1)
    assert penalty(("a", "b"), 0.1, 3, mentioned=("a",)) == pytest.approx(-0.2)
    # the cap keeps the costliest: the unmentioned ones
    assert penalty(("a", "b", "c"), 0.1, 2, mentioned=("a",), softening=1.0) == pytest.approx(-0.2)


def test_a_word_the_card_does_not_explain_supplies_only_plain_strings() -> None:
    query = "mass transfer rate for ethanol"
    offer = step_offer(query, analyse(query), None)
    substance = compile_rules(one("substance", type="string"))
    assert missing_required(substance, offer) == ("substance",)
    assert missing_required(substance, offer, unexplained=True) == ()
    order = compile_rules(one("order_id", type="string"))
    assert missing_required(order, offer, unexplained=True) == ("order_id",)


def test_ordinal_dates_count_as_dates() -> None:
    assert missing(one("date", type="string"), "check the schedule for May 30th") == ()


def test_a_context_value_of_a_recursive_parameter_is_not_checked_against_the_wrong_schema() -> None:
    """``{"$ref": "#"}`` means the card's root; standing alone it meant the parameter's own
    schema, so a good child node was refused as "not of type 'array'"."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["name", "children"],
    }
    rules = compile_rules(schema)
    context = {"name": "a", "children": [{"name": "b"}]}
    offer = step_offer("plant a tree", analyse("plant a tree"), context)
    assert check_parameters(rules, offer, value_problem) == ParameterCheck()
