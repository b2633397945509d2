"""Tokenizer, identifier splitting, CJK bigrams, stemming, segmentation, embedded text."""

from __future__ import annotations

import pytest

from app.routing import ToolDoc, embedding_text, query_segments, query_texts
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


def test_sentences_and_chained_requests_are_segments() -> None:
    query = (
        "Scan example.com for vulnerabilities. Next, monitor the CPU of 192.168.1.7, "
        "and also compute the mutual information of 'a' and 'b'."
    )
    assert query_segments(query) == [
        "Scan example.com for vulnerabilities.",
        "Next, monitor the CPU of 192.168.1.7",
        "also compute the mutual information of 'a' and 'b'.",
    ]


def test_lists_numbers_and_short_sentences_are_not_split() -> None:
    assert query_segments("Compare apples, pears, and bananas.") == [
        "Compare apples, pears, and bananas."
    ]
    assert query_segments("Convert 3.5 kg to pounds") == ["Convert 3.5 kg to pounds"]
    assert query_segments("Hello! I need a QR code for my site.") == [
        "Hello! I need a QR code for my site."
    ]


def test_chinese_sentences_are_segments() -> None:
    assert query_segments("查一下北京的天气。另外，把这句话翻译成英文") == [
        "查一下北京的天气。",
        "另外，把这句话翻译成英文",
    ]


def test_query_texts_adds_segments_only_for_multi_ask_queries() -> None:
    assert query_texts("weather in Paris") == ["weather in Paris"]
    multi = "Get the weather in Paris. Then book a table for two tonight."
    assert query_texts(multi) == [multi, *query_segments(multi)]
    assert len(query_texts(multi)) == 3


def test_embedding_text_reads_like_a_card() -> None:
    doc = ToolDoc(
        name="getWeather",
        summary="Current weather",
        description="Current weather for a city",
        tags=("weather",),
        parameters={"properties": {"city_name": {"type": "string", "description": "A city"}}},
        examples=("Is it raining in Oslo?",),
    )
    assert embedding_text(doc) == (
        "get weather: Current weather Current weather for a city. "
        "Parameters: city name: A city. Tags: weather. Examples: Is it raining in Oslo?"
    )
    same = ToolDoc(name="x", summary="Same text", description="Same text")
    assert embedding_text(same) == "x: Same text."
