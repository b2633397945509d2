"""Is this call valid? Exact jsonschema messages, paths, suggestions, and did-you-mean."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry.calls import CallError, did_you_mean, validate_arguments, value_problem
from registry.card import ToolCard

PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {
            "type": "string",
            "description": "City name, e.g. 'Paris, FR'",
            "examples": ["Paris, FR"],
        },
        "units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7, "default": 1},
        "start": {"type": "string", "format": "date"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["sku", "qty"],
            },
        },
    },
    "required": ["city"],
    "additionalProperties": False,
}


def make_card(errors: list[dict[str, Any]] | None = None, **schema: Any) -> ToolCard:
    return ToolCard.model_validate(
        {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": schema or PARAMS,
            "errors": errors or [],
        }
    )


def check(arguments: Any, card: ToolCard | None = None) -> list[CallError]:
    return validate_arguments(card or make_card(), arguments)


def test_valid_call_has_no_errors() -> None:
    assert check({"city": "Oslo", "units": "metric", "items": [{"sku": "a", "qty": 1}]}) == []


def test_missing_required_says_what_to_send() -> None:
    assert check({}) == [
        CallError(
            path="",
            message="'city' is a required property",
            suggestion="add 'city' (string): City name, e.g. 'Paris, FR' (example: \"Paris, FR\")",
        )
    ]


def test_enum_lists_the_values_and_the_closest() -> None:
    [error] = check({"city": "Oslo", "units": "Metrik"})
    assert error.path == "/units"
    assert error.message == "'Metrik' is not one of ['metric', 'imperial']"
    assert error.suggestion == 'use one of: "metric", "imperial"; did you mean "metric"?'


def test_wrong_type_gives_the_type_and_an_example() -> None:
    [error] = check({"city": "Oslo", "days": "3"})
    assert (error.path, error.message) == ("/days", "'3' is not of type 'integer'")
    assert error.suggestion == "expected integer, e.g. 1"


def test_unknown_property_gets_the_closest_allowed_name() -> None:
    [error] = check({"citty": "Oslo", "city": "Oslo"})
    assert error.message == "Additional properties are not allowed ('citty' was unexpected)"
    assert error.suggestion == "did you mean 'city'?"


def test_several_unknown_properties_each_get_a_name() -> None:
    [error] = check({"city": "Oslo", "unit": "metric", "dayz": 2})
    assert (
        error.suggestion
        == "did you mean 'days' instead of 'dayz'? did you mean 'units' instead of 'unit'?"
    )


def test_unknown_property_with_nothing_close_is_to_be_removed() -> None:
    [error] = check({"city": "Oslo", "zzz": 1})
    assert error.suggestion == "remove 'zzz'; allowed: city, days, items, start, units"


def test_format_gives_the_shape() -> None:
    [error] = check({"city": "Oslo", "start": "14/03/2025"})
    assert (error.path, error.message) == ("/start", "'14/03/2025' is not a 'date'")
    assert error.suggestion == "expected date: YYYY-MM-DD, e.g. 2025-03-14"


def test_nested_paths_are_json_pointers_and_errors_are_sorted() -> None:
    errors = check({"items": [{"sku": "a"}] * 2 + [{"sku": 1, "qty": 1}] * 9 + [{"qty": "x"}]})
    assert [(e.path, e.message) for e in errors] == [
        ("", "'city' is a required property"),
        ("/items/0", "'qty' is a required property"),
        ("/items/1", "'qty' is a required property"),
        *[(f"/items/{i}/sku", "1 is not of type 'string'") for i in range(2, 11)],
        ("/items/11", "'sku' is a required property"),
        ("/items/11/qty", "'x' is not of type 'integer'"),
    ]
    assert errors == check(
        {"items": [{"sku": "a"}] * 2 + [{"sku": 1, "qty": 1}] * 9 + [{"qty": "x"}]}
    )


def test_json_pointer_escapes_keys() -> None:
    card = make_card(
        type="object",
        properties={"a/b": {"type": "object", "properties": {"m~n": {"type": "string"}}}},
    )
    assert [e.path for e in check({"a/b": {"m~n": 1}}, card)] == ["/a~1b/m~0n"]


def test_arguments_sent_as_a_json_string() -> None:
    [error] = check('{"city": "Oslo"}')
    assert error.message == "'{\"city\": \"Oslo\"}' is not of type 'object'"
    assert error.suggestion == "send the arguments as a JSON object, not a JSON-encoded string"


def test_any_of_points_at_the_closest_alternative() -> None:
    card = make_card(
        type="object",
        properties={"when": {"anyOf": [{"type": "integer"}, {"type": "string", "format": "date"}]}},
    )
    [error] = check({"when": "tomorrow"}, card)
    assert error.message == "'tomorrow' is not valid under any of the given schemas"
    assert error.suggestion == "closest alternative: 'tomorrow' is not a 'date'"


def test_other_keywords_fall_back_to_an_example() -> None:
    [error] = check({"city": "Oslo", "days": 9})
    assert error.message == "9 is greater than the maximum of 7"
    assert error.suggestion == "e.g. 1"


def test_const_says_the_value() -> None:
    card = make_card(type="object", properties={"v": {"const": True}})
    assert check({"v": False}, card)[0].suggestion == "use true"


ERRORS = [
    {"code": "INVALID_ARGUMENT", "meaning": "bad input", "suggestion": "Fix the argument."},
    {
        "code": "missing-parameter",
        "meaning": "a parameter is missing",
        "suggestion": "Ask the user.",
    },
    {"code": "INVALID_UNITS", "meaning": "bad units", "suggestion": "Use metric or imperial."},
    {"code": "INVALID_QTY", "meaning": "bad quantity", "suggestion": "Use a whole number."},
    {"code": "INVALID_DAYS", "meaning": "no suggestion here"},
]


@pytest.mark.parametrize(
    ("arguments", "table_hint"),
    [
        ({}, "missing-parameter: Ask the user."),
        ({"city": "Oslo", "units": "kelvin"}, "INVALID_UNITS: Use metric or imperial."),
        ({"city": "Oslo", "items": [{"sku": "a", "qty": "x"}]}, "INVALID_QTY: Use a whole number."),
        ({"city": "Oslo", "days": 0}, "INVALID_ARGUMENT: Fix the argument."),
        ({"city": 5}, "INVALID_ARGUMENT: Fix the argument."),
    ],
)
def test_error_table_suggestion_is_included(arguments: dict[str, Any], table_hint: str) -> None:
    [error] = check(arguments, make_card(ERRORS))
    assert error.suggestion is not None
    assert error.suggestion.endswith(table_hint)


GENERAL_ABOUT_UNITS = [
    {"code": "INVALID_ARGUMENT", "meaning": "units is not metric or imperial.",
     "suggestion": "Use metric or imperial and retry."},
]  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "suggestion"),
    [
        # The missing city: the only general row is about units, so it says nothing here.
        ({}, "add 'city' (string): City name, e.g. 'Paris, FR' (example: \"Paris, FR\")"),
        ({"city": 5}, 'expected string, e.g. "Paris, FR"'),
        # The row names units: it is the row about this problem.
        (
            {"city": "Oslo", "units": "kelvin"},
            'use one of: "metric", "imperial"; INVALID_ARGUMENT: Use metric or imperial and retry.',
        ),
    ],
)
def test_a_general_row_speaks_only_of_the_argument_it_names(
    arguments: dict[str, Any], suggestion: str
) -> None:
    [error] = check(arguments, make_card(GENERAL_ABOUT_UNITS))
    assert error.suggestion == suggestion


def test_a_general_row_naming_a_nested_argument_is_about_it() -> None:
    row = {"code": "INVALID_INPUT", "meaning": "qty is below 1", "suggestion": "Order at least 1."}
    [error] = check({"city": "Oslo", "items": [{"sku": "a", "qty": "x"}]}, make_card([row]))
    assert error.suggestion == "expected integer; INVALID_INPUT: Order at least 1."
    [missing] = check({}, make_card([row]))
    assert missing.suggestion is not None and "Order at least" not in missing.suggestion


def test_the_demo_weather_card_suggests_nothing_about_units_for_a_missing_location() -> None:
    demo = Path(__file__).resolve().parents[2] / "app" / "demo" / "catalog.json"
    [weather] = [
        ToolCard.model_validate(c)
        for c in json.loads(demo.read_text(encoding="utf-8"))
        if c["name"] == "get_current_weather"
    ]
    [missing] = validate_arguments(weather, {})
    assert missing.suggestion is not None and missing.suggestion.startswith("add 'location'")
    assert "metric" not in missing.suggestion and "INVALID_ARGUMENT" not in missing.suggestion
    [units] = validate_arguments(weather, {"location": "Paris, FR", "units": "kelvin"})
    assert units.suggestion is not None
    assert units.suggestion.endswith("INVALID_ARGUMENT: Use metric or imperial and retry.")


def test_error_table_matches_camel_case_params_case_insensitively() -> None:
    card = make_card(
        [{"code": "invalid_start_date", "meaning": "m", "suggestion": "Use YYYY-MM-DD."}],
        type="object",
        properties={"startDate": {"type": "string", "format": "date"}},
    )
    [error] = check({"startDate": "soon"}, card)
    assert (
        error.suggestion
        == "expected date: YYYY-MM-DD, e.g. 2025-03-14; invalid_start_date: Use YYYY-MM-DD."
    )


def test_a_pattern_error_without_an_example_suggests_the_description() -> None:
    spec = {"type": "string", "pattern": "^[A-Z]{1,5}$", "description": " e.g.\n AAPL "}
    card = make_card(type="object", properties={"ticker": spec})
    [error] = check({"ticker": "apple"}, card)
    assert error.suggestion == "e.g. AAPL"


def test_only_a_pattern_error_falls_back_to_the_description_and_it_is_cut() -> None:
    spec = {"type": "integer", "minimum": 0, "description": "Number of results"}
    card = make_card(type="object", properties={"n": spec})
    assert check({"n": -1}, card)[0].suggestion is None
    long = {"type": "string", "pattern": "^a+$", "description": "x" * 1000}
    [error] = check({"s": "b"}, make_card(type="object", properties={"s": long}))
    assert error.suggestion is not None and len(error.suggestion) == 200


def test_no_suggestion_when_nothing_is_known() -> None:
    card = make_card(type="object", properties={"n": {"type": "integer", "minimum": 0}})
    assert check({"n": -1}, card) == [CallError("/n", "-1 is less than the minimum of 0")]


def test_too_deep_arguments_are_refused_without_recursion() -> None:
    deep: Any = "x"
    for _ in range(5_000):
        deep = [deep]
    [error] = check({"city": "Oslo", "items": deep})
    assert error == CallError("", "the arguments nest deeper than 64 levels")


# --- did_you_mean ----------------------------------------------------------------------------

NAMES = [
    "get_current_weather",
    "get_weather_forecast",
    "get_weather_alerts",
    "get_order_details",
    "cancel_order",
    "create_return",
    "search_users",
    "search_files",
    "send_email",
    "read_email",
]


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("GET_ORDER_DETAILS", "get_order_details"),
        ("getOrderDetails", "get_order_details"),
        ("get-order-details", "get_order_details"),
        ("weather_get_current", "get_current_weather"),
        ("serch_users", "search_users"),
        ("send_mail", "send_email"),
        ("getOrder", "get_order_details"),
    ],
)
def test_did_you_mean_finds_the_real_name(name: str, first: str) -> None:
    assert did_you_mean(name, NAMES)[0] == first


def test_did_you_mean_puts_exact_case_insensitive_match_first() -> None:
    names = ["getorder", "get_order", "GetOrder", "get_orders"]
    assert did_you_mean("getOrder", names) == ["getorder", "GetOrder", "get_order"]
    assert did_you_mean("getOrder", [*names, "getOrder"])[0] == "getOrder"


def test_did_you_mean_gives_only_the_name_meant_when_it_differs_by_case_or_separators() -> None:
    names = ["get_stock_price", "get_invoice", "get_historical_weather", "get_stock_history"]
    assert did_you_mean("getStockPrice", names) == ["get_stock_price"]
    assert did_you_mean("get_stock_prices", names)[:2] == ["get_stock_price", "get_stock_history"]


def test_did_you_mean_gives_nothing_for_unrelated_names() -> None:
    assert did_you_mean("translate_text", NAMES) == []


def test_did_you_mean_limits_deduplicates_and_is_deterministic() -> None:
    names = NAMES + NAMES
    assert did_you_mean("get_weather", names, n=2) == did_you_mean(
        "get_weather", reversed(names), n=2
    )
    assert len(did_you_mean("get_weather", names, n=2)) == 2
    assert did_you_mean("get_weather", names, n=0) == []
    assert len(set(did_you_mean("get_weather", names, n=10))) == len(
        did_you_mean("get_weather", names, n=10)
    )


def arrays_card(**properties: Any) -> ToolCard:
    schema = {"type": "object", "properties": properties}
    return ToolCard(name="t", description="Takes arrays.", parameters=schema)


@pytest.mark.timeout(60)  # pairwise, 30,000 objects took tens of minutes; one pass is ~0.2 s
def test_unique_items_is_one_pass_with_json_equality() -> None:
    card = arrays_card(a={"type": "array", "uniqueItems": True})
    many = [{"k": i, "v": [i, {"x": str(i)}]} for i in range(30_000)]
    assert validate_arguments(card, {"a": many}) == []
    [error] = validate_arguments(card, {"a": [*many, {"v": [7, {"x": "7"}], "k": 7.0}]})
    assert error.path == "/a"
    assert error.message.endswith("has non-unique elements (items 7 and 30000 are equal)")
    assert len(error.message) < 300  # not the array's 1.5 MB repr
    assert validate_arguments(card, {"a": [1, True, 0, False, None, "1", [1], {"1": 1}]}) == []
    assert validate_arguments(card, {"a": [[1, 2], [2, 1]]}) == []  # arrays keep their order
    assert len(validate_arguments(card, {"a": [1, 1.0]})) == 1


@pytest.mark.parametrize(
    ("value", "valid"),
    [(0.3, True), (12, True), (10**400, True), (0.35, False), (float("inf"), False)],
)
def test_multiple_of_is_exact_and_never_overflows(value: float, valid: bool) -> None:
    card = arrays_card(m={"type": "number", "multipleOf": 0.1})
    errors = validate_arguments(card, {"m": value})
    assert (errors == []) is valid, errors
    if not valid:
        assert errors[0].message == f"{value!r} is not a multiple of 0.1"


def test_value_problem_checks_one_parameter_and_tells_true_from_one() -> None:
    integer = '{"type":"integer","minimum":1}'
    assert value_problem(integer, 1) is None
    assert value_problem(integer, True) == "True is not of type 'integer'"  # not the cached 1
    assert value_problem(integer, 0) == "0 is less than the minimum of 1"
    assert value_problem('{"format":"date-time","type":"string"}', "tomorrow") == (
        "'tomorrow' is not a 'date-time'"
    )
    assert value_problem('{"$ref":"#/$defs/missing"}', "x") is None  # cannot be checked alone
    assert value_problem('{"type":"array"}', [[[]]] * 2) is None
