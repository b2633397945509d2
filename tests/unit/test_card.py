"""The tool card: defaults, normalisation, and errors that point at the field and say why."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from pydantic import ValidationError

from registry.card import LATER_FIELDS, TRUSTED, ToolCard, content_hash, first_sentence

WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "Current weather for a city. Use it for today, not for forecasts.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    },
}


def card(**changes: Any) -> ToolCard:
    return ToolCard.model_validate({**WEATHER, **changes})


def only_error(**changes: Any) -> dict[str, Any]:
    with pytest.raises(ValidationError) as caught:
        card(**changes)
    errors = caught.value.errors()
    assert len(errors) == 1, errors
    return dict(errors[0])


def test_defaults() -> None:
    tool = ToolCard.model_validate({"name": "ping", "description": "Check the service is up."})
    assert tool.namespace == "default"
    assert tool.parameters == {"type": "object", "properties": {}}
    assert tool.returns is None
    assert (tool.errors, tool.tags, tool.examples, tool.pinned) == ([], [], [], False)


def test_parameters_none_means_no_arguments() -> None:
    assert card(parameters=None).parameters == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("description", "summary"),
    [
        ("Current weather for a city. Use it for today.", "Current weather for a city."),
        ("Is it raining? Ask this tool.", "Is it raining?"),
        ("Stop now! Really.", "Stop now!"),
        ("查询城市的实时天气。不用于预报。", "查询城市的实时天气。"),
        ("First line\nsecond line. More.", "First line"),
        ("  \n Leading blank lines\nthen more", "Leading blank lines"),
        ("Convert units, e.g. km to miles. Fast.", "Convert units, e.g. km to miles."),
        ("No full stop at all", "No full stop at all"),
        ("Version 2.0 is here. Yes.", "Version 2.0 is here."),
    ],
)
def test_summary_defaults_to_the_first_sentence(description: str, summary: str) -> None:
    assert card(description=description).summary == summary


def test_long_first_sentence_is_clipped_at_a_word() -> None:
    summary = first_sentence("word " * 100)
    assert len(summary) <= 300
    assert summary.endswith("word…")


def test_given_summary_is_kept_on_one_line() -> None:
    assert card(summary="  Weather\n now  ").summary == "Weather now"


def test_summary_longer_than_300_is_refused() -> None:
    error = only_error(summary="x" * 301)
    assert error["loc"] == ("summary",)
    assert error["msg"] == "summary must be one line of at most 300 characters, got 301"


def test_tags_and_examples_are_stripped_and_tags_deduplicated() -> None:
    tool = card(tags=[" weather ", "city", "weather"], examples=[" is it raining in Oslo? "])
    assert tool.tags == ["weather", "city"]
    assert tool.examples == ["is it raining in Oslo?"]


@pytest.mark.parametrize(
    ("changes", "loc"),
    [
        ({"name": "get weather"}, ("name",)),
        ({"name": "x" * 129}, ("name",)),
        ({"name": "get_weather\n"}, ("name",)),
        ({"namespace": "team/a"}, ("namespace",)),
        ({"description": "   "}, ("description",)),
        ({"description": "x" * 8001}, ("description",)),
        ({"tags": ["ok", " "]}, ("tags", 1)),
        ({"tags": [f"t{i}" for i in range(33)]}, ("tags",)),
        ({"examples": ["x" * 1001]}, ("examples", 0)),
        ({"errors": [{"code": "", "meaning": "m"}]}, ("errors", 0, "code")),
        ({"errors": [{"code": "E", "meaning": "m", "extra": 1}]}, ("errors", 0, "extra")),
        ({"version": 3}, ("version",)),
    ],
)
def test_field_errors_point_at_the_field(changes: dict[str, Any], loc: tuple[Any, ...]) -> None:
    assert only_error(**changes)["loc"] == loc


def test_missing_description_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        ToolCard.model_validate({"name": "x"})
    assert [e["loc"] for e in caught.value.errors()] == [("description",)]


def test_required_entry_missing_from_properties() -> None:
    parameters = {**WEATHER["parameters"], "required": ["city", "country"]}
    error = only_error(parameters=parameters)
    assert error["loc"] == ("parameters",)
    assert error["type"] == "json_schema"
    assert error["msg"] == "required entry 'country' is not in properties (at /required/1)"


def test_non_re2_pattern_message_is_exact() -> None:
    parameters = {
        "type": "object",
        "properties": {"city": {"type": "string", "pattern": "(?<=a)b"}},
    }
    error = only_error(parameters=parameters)
    assert error["loc"] == ("parameters",)
    assert error["msg"] == (
        "pattern '(?<=a)b' cannot be compiled by the linear-time engine (RE2): "
        "invalid perl operator: (?<= (at /properties/city/pattern)"
    )


def test_parameters_must_be_an_object_schema() -> None:
    error = only_error(parameters={"type": "array"})
    assert error["loc"] == ("parameters",)
    assert "must have type 'object'" in error["msg"]


def test_returns_are_checked_too() -> None:
    error = only_error(returns={"type": 5})
    assert error["loc"] == ("returns",)
    assert error["msg"].startswith("not valid JSON Schema: 5 is not valid under any")
    assert card(returns={"type": "array"}).returns == {"type": "array"}


def test_trusted_context_skips_the_schema_checks() -> None:
    stored = {**WEATHER, "parameters": {"type": "object", "required": ["city"]}}
    with pytest.raises(ValidationError):
        ToolCard.model_validate(stored)
    assert ToolCard.model_validate(stored, context=TRUSTED).parameters == stored["parameters"]


def test_content_hash_ignores_namespace_and_sees_every_content_field() -> None:
    base = content_hash(card())
    assert content_hash(card(namespace="team-b")) == base
    assert content_hash(ToolCard.model_validate(card().model_dump())) == base
    for changes in (
        {"description": WEATHER["description"] + " More."},
        {"summary": "Weather."},
        {"tags": ["weather"]},
        {"pinned": True},
        {"returns": {"type": "object"}},
        {"errors": [{"code": "E", "meaning": "m"}]},
    ):
        assert content_hash(card(**changes)) != base, changes


def test_content_hash_of_a_card_without_the_later_fields_is_as_it_was() -> None:
    """Cards stored before `title`, `annotations` and `source` existed keep their hash:
    re-importing one unchanged adds no version."""
    content = card().model_dump(mode="json", exclude={"namespace", *LATER_FIELDS})
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert content_hash(card()) == hashlib.sha256(text.encode()).hexdigest()
    assert content_hash(card(title="Weather")) != content_hash(card())
    assert content_hash(card(annotations={"readOnlyHint": True})) != content_hash(card())
    assert LATER_FIELDS == ("title", "annotations", "source")


def test_content_hash_does_not_depend_on_key_order() -> None:
    reordered = {"required": ["city"], **WEATHER["parameters"]}
    assert content_hash(card(parameters=reordered)) == content_hash(card())


@pytest.mark.parametrize("field", ["name", "namespace"])
@pytest.mark.parametrize("dots", [".", "..", "..."])
def test_a_name_of_dots_only_is_refused(field: str, dots: str) -> None:
    """Browsers and HTTP clients collapse /./ and /../ in a URL: such a tool's links and its
    /v1/tools/{name} path led elsewhere."""
    # A namespace's pattern refuses them (its first character is not a dot).
    with pytest.raises(ValidationError, match="dots only" if field == "name" else "pattern"):
        ToolCard(**{"name": "t", "description": "d.", field: dots})
    assert ToolCard(name="v1.2", description="d.", namespace="a.b").name == "v1.2"
