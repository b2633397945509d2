"""JSON Schema checks: every kind of hostile or broken schema is refused with its reason."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from registry.json_schema import (
    MAX_ENUM_ENTRIES,
    MAX_SUBSCHEMAS,
    SchemaError,
    TooCostly,
    check_schema,
    iter_errors,
    json_pointer,
    make_validator,
)


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = obj(x=schema)
    return schema


def fan_out(levels: int) -> dict[str, Any]:
    """d0 -> (d1, d1), d1 -> (d2, d2), ...: 2**levels subschemas once refs are followed."""
    defs: dict[str, Any] = {
        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "string"}
    return {**obj(x={"$ref": "#/$defs/d0"}), "$defs": defs}


def refused(schema: Any, *, require_object: bool = True) -> SchemaError:
    with pytest.raises(SchemaError) as caught:
        check_schema(schema, require_object=require_object)
    return caught.value


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging if the block runs longer than ``seconds``."""

    def expired(_signum: int, _frame: Any) -> None:
        raise TimeoutError(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


BAD_SCHEMAS = [
    pytest.param([1], "", "a schema must be a JSON object, not list", id="not-a-dict"),
    pytest.param(
        {"type": 5}, "/type", "not valid JSON Schema: 5 is not valid under any", id="meta-schema"
    ),
    pytest.param(
        {"type": "string"}, "/type", "the schema must have type 'object', not 'string'", id="type"
    ),
    pytest.param({"properties": {}}, "", "must have type 'object', not None", id="no-type"),
    pytest.param(
        {**obj(city={"type": "string"}), "required": ["city", "country"]},
        "/required/1",
        "required entry 'country' is not in properties",
        id="required",
    ),
    pytest.param(nested(20), None, "nests deeper than 32 levels", id="too-deep"),
    pytest.param(
        obj(**{f"p{i}": {"type": "string"} for i in range(MAX_SUBSCHEMAS)}),
        "",
        f"more than {MAX_SUBSCHEMAS} subschemas",
        id="too-many-nodes",
    ),
    pytest.param(
        obj(unit={"enum": list(range(MAX_ENUM_ENTRIES + 1))}),
        "/properties/unit/enum",
        f"enum has 501 entries; the limit is {MAX_ENUM_ENTRIES}",
        id="huge-enum",
    ),
    pytest.param(
        obj(unit={"const": list(range(MAX_ENUM_ENTRIES + 1))}),
        "/properties/unit/const",
        "const has 501 entries",
        id="huge-const",
    ),
    pytest.param(
        {**obj(), "description": "x" * 70_000}, "", "bytes as JSON; the limit is 65536", id="size"
    ),
    pytest.param(
        obj(a={"$ref": "https://example.com/schema.json"}),
        "/properties/a/$ref",
        "$ref 'https://example.com/schema.json' is not local",
        id="remote-ref",
    ),
    pytest.param(
        obj(a={"$ref": "other.json#/a"}),
        "/properties/a/$ref",
        "$ref 'other.json#/a' is not local",
        id="relative-ref",
    ),
    pytest.param(
        obj(a={"$ref": "#/$defs/missing"}),
        "/properties/a/$ref",
        "$ref '#/$defs/missing' does not resolve inside this schema",
        id="dangling-ref",
    ),
    pytest.param(
        obj(a={"$ref": "#/required"}) | {"required": []},
        "/properties/a/$ref",
        "points at a list, not a schema",
        id="ref-to-non-schema",
    ),
    pytest.param(
        obj(a={"$ref": "#/$defs/a"})
        | {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}}},
        "/$defs/b/$ref",
        "$ref '#/$defs/a' forms a cycle that never goes into a part of the value",
        id="ref-cycle",
    ),
    pytest.param(
        {**obj(), "allOf": [{"$ref": "#"}]},
        "/allOf/0/$ref",
        "$ref '#' forms a cycle",
        id="ref-to-root-in-place",
    ),
    pytest.param(
        {**obj(), "not": {"$ref": "#"}}, "/not/$ref", "$ref '#' forms a cycle", id="ref-not"
    ),
    pytest.param(
        fan_out(20), "/$defs/d", "expands to more than 10000 subschemas", id="ref-fan-out"
    ),
    pytest.param(
        obj(a={"$dynamicRef": "#meta"}),
        "/properties/a/$dynamicRef",
        "$dynamicRef is not supported",
        id="dynamic-ref",
    ),
    pytest.param(
        {
            "$schema": "https://json-schema.org/draft/2019-09/schema",
            **obj(a={"$recursiveRef": "#"}),
        },
        "/properties/a/$recursiveRef",
        "$recursiveRef is not supported",
        id="recursive-ref",
    ),
    pytest.param(
        obj(a={"$id": "https://example.com/a", "type": "string"}),
        "/properties/a",
        "$id and $schema are only allowed at the schema root",
        id="nested-id",
    ),
    pytest.param(
        {"$schema": "https://example.com/my-dialect", **obj()},
        "/$schema",
        "unsupported $schema 'https://example.com/my-dialect'",
        id="unknown-dialect",
    ),
    pytest.param(
        obj(a={"type": "string", "pattern": "(?<=a)b"}),
        "/properties/a/pattern",
        "pattern '(?<=a)b' cannot be compiled by the linear-time engine (RE2): invalid perl",
        id="lookbehind",
    ),
    pytest.param(
        obj(a={"type": "string", "pattern": r"(a)\1"}),
        "/properties/a/pattern",
        "cannot be compiled by the linear-time engine (RE2): invalid escape sequence",
        id="backreference",
    ),
    pytest.param(
        {**obj(), "patternProperties": {"^(?!x_)": {"type": "string"}}},
        "/patternProperties/^(?!x_)",
        "pattern '^(?!x_)' cannot be compiled by the linear-time engine (RE2)",
        id="pattern-properties-key",
    ),
    pytest.param(
        {**obj(), "patternProperties": {"^x_": {}}, "unevaluatedProperties": False},
        "/unevaluatedProperties",
        "unevaluatedProperties cannot be combined with patternProperties",
        id="unevaluated-with-patterns",
    ),
    pytest.param(
        {**obj(), "default": float("nan")}, "", "the schema is not plain JSON", id="not-json"
    ),
]


@pytest.mark.parametrize(("schema", "pointer", "reason"), BAD_SCHEMAS)
def test_bad_schema_is_refused_with_its_reason(
    schema: Any, pointer: str | None, reason: str
) -> None:
    error = refused(schema)
    assert reason in error.reason
    if pointer is not None:
        assert error.pointer.startswith(pointer)
    assert str(error).startswith(error.reason)
    assert (error.pointer or "the schema root") in str(error)


def test_fan_out_of_combinators_below_the_bound_is_accepted() -> None:
    check_schema(fan_out(10), require_object=True)  # 2**10 subschemas: fine


def test_deep_but_bounded_schema_is_accepted() -> None:
    check_schema(nested(15), require_object=True)  # 31 levels of JSON


def test_good_schemas_in_each_supported_draft_are_accepted() -> None:
    for uri in (
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ):
        schema = {
            "$schema": uri,
            **obj(city={"type": "string", "pattern": r"^\p{L}[\p{L} -]*$"}),
            "required": ["city"],
        }
        check_schema(schema, require_object=True)


def test_local_refs_with_escapes_resolve() -> None:
    schema = {
        **obj(a={"$ref": "#/$defs/a~1b"}, b={"$ref": "#/$defs/with%20space"}),
        "$defs": {"a/b": {"type": "string"}, "with space": {"type": "integer"}},
    }
    check_schema(schema, require_object=True)
    validator = make_validator(schema)
    assert [e.message for e in validator.iter_errors({"a": 1, "b": 2})] == [
        "1 is not of type 'string'"
    ]


def test_returns_need_not_be_an_object() -> None:
    check_schema({"type": "array", "items": {"type": "string"}}, require_object=False)
    assert "type 'object'" in refused({"type": "array"}).reason


def test_dangling_ref_in_unused_defs_is_still_refused() -> None:
    schema = {**obj(), "$defs": {"unused": {"$ref": "#/$defs/gone"}}}
    assert refused(schema).pointer == "/$defs/unused/$ref"


def test_json_pointer_escapes_tokens() -> None:
    assert json_pointer(["a/b", "m~n", 0]) == "/a~1b/m~0n/0"
    assert json_pointer([]) == ""


def test_catastrophic_pattern_runs_in_linear_time_on_re2() -> None:
    validator = make_validator(obj(word={"type": "string", "pattern": "^(a+)+$"}))
    with deadline(5):
        errors = list(validator.iter_errors({"word": "a" * 30 + "!"}))
        assert list(validator.iter_errors({"word": "a" * 30})) == []
    assert [e.message for e in errors] == [f"'{'a' * 30}!' does not match '^(a+)+$'"]


def test_pattern_properties_and_additional_properties_run_on_re2() -> None:
    schema = {**obj(), "patternProperties": {"^(a+)+$": {"type": "integer"}}}
    validator = make_validator({**schema, "additionalProperties": False})
    hostile = "a" * 30 + "!"
    with deadline(5):
        errors = list(validator.iter_errors({"aaa": "x", hostile: 1}))
    assert sorted(e.message for e in errors) == [
        f"'{hostile}' does not match any of the regexes: '^(a+)+$'",
        "'x' is not of type 'integer'",
    ]


def test_pattern_is_searched_not_anchored_like_json_schema_says() -> None:
    validator = make_validator(obj(code={"type": "string", "pattern": "[0-9]{3}"}))
    assert list(validator.iter_errors({"code": "ab123cd"})) == []
    assert len(list(validator.iter_errors({"code": "ab12"}))) == 1


def test_unicode_property_classes_work() -> None:
    validator = make_validator(obj(name={"type": "string", "pattern": r"^\p{L}+$"}))
    assert list(validator.iter_errors({"name": "Zoë"})) == []
    assert list(validator.iter_errors({"name": "广州"})) == []
    assert len(list(validator.iter_errors({"name": "R2D2"}))) == 1


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date", "2025-03-14", "2025-13-14"),
        ("date-time", "2025-03-14T09:30:00Z", "2025-03-14 09:30"),
        ("date-time", "2025-03-14T09:30:00.5+02:00", "2025-02-30T09:30:00Z"),
        ("time", "09:30:00Z", "25:00:00Z"),
        ("email", "ana@example.com", "ana.example.com"),
        ("uri", "https://example.com/a?b=c", "example.com/a b"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
        ("ipv4", "192.0.2.1", "192.0.2.256"),
        ("ipv6", "2001:db8::1", "2001:db8:::1"),
        ("regex", "^[a-z]+$", "(?<=a)b"),
    ],
)
def test_formats_are_asserted(fmt: str, good: str, bad: str) -> None:
    validator = make_validator(obj(value={"type": "string", "format": fmt}))
    assert list(validator.iter_errors({"value": good})) == []
    assert [e.message for e in validator.iter_errors({"value": bad})] == [
        f"{bad!r} is not a {fmt!r}"
    ]


def test_make_validator_is_cached_by_content_and_isolated_from_the_caller() -> None:
    schema = obj(a={"type": "string"})
    first = make_validator(schema)
    assert make_validator({"properties": {"a": {"type": "string"}}, "type": "object"}) is first
    schema["properties"]["a"]["type"] = "integer"  # the caller mutates its own dict
    assert [e.message for e in first.iter_errors({"a": 1})] == ["1 is not of type 'string'"]


def test_make_validator_refuses_a_bad_schema() -> None:
    with pytest.raises(SchemaError, match=re.escape("pattern '(?=x)'")):
        make_validator({"type": "string", "pattern": "(?=x)"})


def test_a_pattern_too_big_for_re2_is_refused() -> None:
    error = refused(obj(name={"type": "string", "pattern": r"^[\p{L}\p{N}]{1,1000}$"}))
    assert error.pointer == "/properties/name/pattern"
    assert error.reason.endswith("(RE2): pattern too large - compile failed")


def test_patterns_have_a_total_compile_budget() -> None:
    heavy = {
        f"p{i}": {"type": "string", "pattern": rf"^[\p{{L}} ]{{1,{60 + i}}}$"} for i in range(5)
    }
    error = refused(obj(**heavy))
    assert "patterns compile to more than 200000 RE2 instructions" in error.reason
    repeated = {f"p{i}": {"type": "string", "pattern": r"^[\p{L} ]{1,60}$"} for i in range(50)}
    check_schema(obj(**repeated), require_object=True)  # one distinct pattern, counted once


def test_lone_surrogates_in_arguments_do_not_break_re2() -> None:
    schema = {**obj(a={"type": "string", "pattern": "^x"}), "patternProperties": {"^b": {}}}
    validator = make_validator({**schema, "additionalProperties": False})
    messages = sorted(e.message for e in validator.iter_errors({"a": "\ud800", "b\ud800": 1}))
    assert messages == ["'\\ud800' does not match '^x'"]


def test_root_id_does_not_break_local_refs() -> None:
    for dialect, id_key, defs in (
        ("https://json-schema.org/draft/2020-12/schema", "$id", "$defs"),
        ("http://json-schema.org/draft-04/schema#", "id", "definitions"),
    ):
        schema = {
            "$schema": dialect,
            id_key: "https://example.com/tool.json",
            **obj(a={"$ref": f"#/{defs}/s"}),
            defs: {"s": {"type": "string"}},
        }
        check_schema(schema, require_object=True)
        errors = make_validator(schema).iter_errors({"a": 1})
        assert [e.message for e in errors] == ["1 is not of type 'string'"]


# The metaschema verdict is jsonschema-rs's (fast); Python's jsonschema words the refusals.
# The two must agree on what is valid: a seeded fuzz of schemas in every supported draft,
# each with one to three keywords set to a value that is wrong somewhere (the kinds seen in
# cards: types, bounds, lists, regexes, refs, ids), compared verdict for verdict.
_FUZZ_BASES: list[dict[str, Any]] = [
    {**obj(city={"type": "string", "description": "a city"}), "required": ["city"]},
    {
        **obj(
            n={"type": "integer", "minimum": 1, "maximum": 100},
            tags={"type": "array", "items": {"type": "string"}, "minItems": 1},
            mode={"enum": ["fast", "slow"], "default": "fast"},
        ),
        "additionalProperties": False,
    },
    {
        **obj(when={"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]}),
        "$defs": {"id": {"type": "string", "pattern": "^[a-z0-9-]+$"}},
    },
]
_FUZZ_KEYS = (
    "type", "minimum", "exclusiveMinimum", "multipleOf", "enum", "const", "required",
    "properties", "items", "prefixItems", "additionalProperties", "pattern", "format",
    "minLength", "minItems", "uniqueItems", "$ref", "$id", "$schema", "$anchor", "$defs",
    "definitions", "anyOf", "oneOf", "allOf", "not", "if", "then", "dependentRequired",
    "dependencies", "patternProperties", "propertyNames", "contains", "examples", "default",
)  # fmt: skip
_FUZZ_VALUES: tuple[Any, ...] = (
    5, -1, 1.0, 1.5, 2**70, "x", "^(a", "date-time", "#frag", None, True, [], {}, ["a", 1],
    ["a", "a"], {"a": 1}, {"type": "string"}, {"type": ["strin"]}, {"$ref": "#"},
    {"$ref": "#/x"}, {"minItems": 1.0}, {"items": [{}]}, {"$anchor": "1bad"},
)  # fmt: skip


def _dict_nodes(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
    if isinstance(value, dict | list):
        for child in value.values() if isinstance(value, dict) else value:
            yield from _dict_nodes(child)


def test_the_fast_metaschema_check_agrees_with_python_jsonschema() -> None:
    import copy
    import random

    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError as MetaSchemaError
    from jsonschema.validators import validator_for

    from registry.json_schema import _DRAFT_URIS, _FAST_META

    rng = random.Random(0)
    drafts = [None, *sorted(_DRAFT_URIS)]
    verdicts = {True: 0, False: 0}
    for _ in range(3_000):
        schema = copy.deepcopy(rng.choice(_FUZZ_BASES))
        for _ in range(rng.randint(1, 3)):
            node = rng.choice(list(_dict_nodes(schema)))
            node[rng.choice(_FUZZ_KEYS)] = copy.deepcopy(rng.choice(_FUZZ_VALUES))
        draft = rng.choice(drafts)
        if draft is not None:
            schema["$schema"] = draft
        elif "$schema" in schema:
            del schema["$schema"]
        cls = validator_for(schema, default=Draft202012Validator)
        try:
            cls.check_schema(schema, format_checker=None)
            python_says = True
        except MetaSchemaError:
            python_says = False
        assert _FAST_META[cls].is_valid(schema) is python_says, schema
        verdicts[python_says] += 1
    assert min(verdicts.values()) > 500  # both verdicts well exercised


def test_a_schema_only_the_fast_check_refuses_is_still_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were jsonschema-rs stricter than Python's jsonschema on some schema, the schema is
    refused in jsonschema-rs's words (simulated with a stricter metaschema)."""
    import jsonschema_rs
    from jsonschema import Draft202012Validator

    from registry import json_schema as schemas

    stricter = jsonschema_rs.Draft202012Validator(
        {"type": "object", "properties": {"properties": {"required": ["city"]}}}
    )
    monkeypatch.setitem(schemas._FAST_META, Draft202012Validator, stricter)
    check_schema(obj(city={"type": "string"}), require_object=True)
    error = refused(obj(town={"type": "string"}))
    assert error.pointer == "/properties"
    assert "not valid JSON Schema" in error.reason and "city" in error.reason


TREE = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#"}},
    },
    "required": ["name"],
}
EXPRESSION = {
    "$defs": {
        "expr": {
            "anyOf": [
                {"type": "number"},
                {
                    "type": "object",
                    "properties": {
                        "op": {"enum": ["+", "*"]},
                        "left": {"$ref": "#/$defs/expr"},
                        "right": {"$ref": "#/$defs/expr"},
                    },
                    "required": ["op", "left", "right"],
                },
            ]
        }
    },
    "type": "object",
    "properties": {"expr": {"$ref": "#/$defs/expr"}},
}


@pytest.mark.parametrize("schema", [TREE, EXPRESSION], ids=["tree", "expression"])
def test_a_recursion_into_parts_of_the_value_is_accepted(schema: dict[str, Any]) -> None:
    """A tree node whose children $ref the node bottoms out: the value is finite."""
    check_schema(schema, require_object=True)


def test_a_recursive_schema_validates_nested_values() -> None:
    validator = make_validator(TREE)
    good = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    assert iter_errors(validator, good) == []
    bad = {"name": "a", "children": [{"name": "b", "children": [{"children": []}]}]}
    (error,) = iter_errors(validator, bad)
    assert list(error.absolute_path) == ["children", 0, "children", 0]


def test_a_recursion_that_revisits_each_part_is_bounded() -> None:
    """Two branches each going into the same part: 2**depth $refs without a bound."""
    twice = {
        "type": "object",
        "anyOf": [
            {"properties": {"a": {"$ref": "#"}}, "required": ["z"]},
            {"properties": {"a": {"$ref": "#"}}, "required": ["y"]},
        ],
    }
    check_schema(twice, require_object=True)
    value: dict[str, Any] = {}
    for _ in range(40):
        value = {"a": value}
    with pytest.raises(TooCostly):
        iter_errors(make_validator(twice), value)
