"""Tokenizer, identifier splitting, CJK bigrams, stemming, embedded text (the parts of a
step: test_routing_parts.py)."""

from __future__ import annotations

import pytest

from app.routing import ToolDoc, embedding_text
from app.routing.text import analyse, cjk_bigrams, parameter_text, required_params, words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("getFilmDetails", ["get", "film", "details"]),
        ("total_query_meta_search_engine", ["total", "query", "meta", "search", "engine"]),
        ("weather.current-conditions", ["weather", "current", "conditions"]),
        ("HTTPServerError", ["http", "server", "error"]),
        ("getHTTPStatus_v2", ["get", "http", "status", "v", "2"]),
        ("ns:tool", ["ns", "tool"]),
    ],
)
def test_identifiers_split_on_case_separators_and_digits(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_cjk_runs_become_overlapping_bigrams() -> None:
    assert cjk_bigrams("北京天气") == ["北京", "京天", "天气"]
    assert cjk_bigrams("天") == ["天"]
    assert words("查询北京天气 forecast") == ["查询", "询北", "北京", "京天", "天气", "forecast"]


def test_analyse_drops_stop_words_and_stems() -> None:
    assert analyse("Can you find the cheapest flights?") == ["find", "cheapest", "flight"]
    assert analyse("running analyses") == ["run", "analys"]
    assert analyse("查天气") == ["查天", "天气"]


@pytest.mark.parametrize("text", ["", "   ", "!!!", "😀😀", "?" * 5000])
def test_analyse_of_nothing_is_empty(text: str) -> None:
    assert analyse(text) == []


def test_schema_helpers_tolerate_malformed_schemas() -> None:
    schema = {"properties": {"cityName": {"description": "The city"}}, "required": ["cityName", 3]}
    assert parameter_text(schema) == ("city Name", "The city")
    assert required_params(schema) == ("cityName",)
    assert parameter_text({"properties": []}) == ("", "")
    assert required_params({"required": "x"}) == ()


def test_embedding_text_reads_like_a_card() -> None:
    doc = ToolDoc(
        name="getWeather",
        summary="Current weather",
        description="Current weather for a city",
        tags=("weather",),
        parameters={
            "properties": {
                "city_name": {"type": "string", "description": "A city"},
                "units": {"type": "string", "description": "metric or imperial"},
                "lang": {"type": "string", "description": "the answer's language"},
            },
            "required": ["city_name"],
        },
        examples=("Is it raining in Oslo?",),
    )
    assert embedding_text(doc) == (
        "get weather: Current weather Current weather for a city. "
        "Parameters: city name: A city. units. lang. "
        "Tags: weather. Examples: Is it raining in Oslo?"
    )  # of more than two: a required parameter with its description, optional ones by name
    two = ToolDoc(
        name="x",
        summary="",
        description="X",
        parameters={"properties": {"a": {"description": "first"}, "b": {"description": "second"}}},
    )
    assert embedding_text(two) == "x: X. Parameters: a: first. b: second."
    same = ToolDoc(name="x", summary="Same text", description="Same text")
    assert embedding_text(same) == "x: Same text."
