"""The parts of a step (``app/routing/parts.py``): one part per request, never a single
request cut in two; English, Chinese and mixed steps."""

from __future__ import annotations

import pytest

from app.routing import query_texts, step_parts
from app.routing.parts import MAX_PARTS, step_parts_spans


@pytest.mark.parametrize(
    ("step", "parts"),
    [
        (
            "Look up tomorrow's weather in Lyon and add a reminder to pack an umbrella",
            ["Look up tomorrow's weather in Lyon", "add a reminder to pack an umbrella"],
        ),
        (
            "Scan example.com for vulnerabilities. Next, monitor the CPU of 192.168.1.7, "
            "and also compute the mutual information of 'a' and 'b'.",
            [
                "Scan example.com for vulnerabilities.",
                "Next, monitor the CPU of 192.168.1.7",
                "also compute the mutual information of 'a' and 'b'.",
            ],
        ),
        (
            "Translate this to French and then summarise it",
            ["Translate this to French", "then summarise it"],
        ),
        (
            "Get the weather, then book a table for two tonight",
            ["Get the weather", "book a table for two tonight"],
        ),
        (
            "Convert 100 USD to EUR, after that email the result to Ann",
            ["Convert 100 USD to EUR", "after that email the result to Ann"],
        ),
        (
            "Email the landlord about the tap, remind me to call the plumber at 9",
            ["Email the landlord about the tap", "remind me to call the plumber at 9"],
        ),
        (
            "How do I get to Shibuya by train and text Kenji that I'm on my way",
            ["How do I get to Shibuya by train", "text Kenji that I'm on my way"],
        ),
        (
            "1. Check the weather in Paris 2. Send an email to Bob 3) book a taxi",
            ["Check the weather in Paris", "Send an email to Bob", "book a taxi"],
        ),
        (
            "Tonight:\n- order Thai food\n- put on some lo-fi music\n- dim the lights",
            ["Tonight:\n- order Thai food", "put on some lo-fi music", "dim the lights"],
        ),
        (
            "Three things: pay the gas bill; transfer 40 to Ana; renew my passport",
            ["Three things: pay the gas bill;", "transfer 40 to Ana;", "renew my passport"],
        ),
    ],
)
def test_each_request_of_an_english_step_is_a_part(step: str, parts: list[str]) -> None:
    assert step_parts(step) == parts


@pytest.mark.parametrize(
    "step",
    [
        "Summarise this article in French",
        "summarise this article in French and keep the tone",
        "Compare apples, pears, and bananas.",
        "Convert 3.5 kg to pounds",
        "Hello! I need a QR code for my site.",
        "Find and book a hotel in Rome",
        "Book a flight and a hotel",
        "Send an email to Alice and Bob about the offsite",
        "Search and replace foo with bar",
        "Can you guide me on how to edit and update a webhook's script?",
        "What's the phone number and email address of the support team?",
        "Add, remove and view the items of my list",
        "Finally, retrieve the survey data for San Francisco.",
        "What is 5 - 3",
    ],
)
def test_a_single_request_stays_one_part(step: str) -> None:
    assert step_parts(step) == [step]


@pytest.mark.parametrize(
    ("step", "parts"),
    [
        ("查一下明天上海的天气，然后提醒我带伞", ["查一下明天上海的天气", "然后提醒我带伞"]),
        ("先查天气再提醒我带伞", ["先查天气", "再提醒我带伞"]),
        ("帮我订机票并且发邮件给老板", ["帮我订机票", "并且发邮件给老板"]),
        ("查天气并提醒我带伞", ["查天气", "提醒我带伞"]),
        (
            "查一下北京的天气。另外，把这句话翻译成英文",
            ["查一下北京的天气。", "另外，把这句话翻译成英文"],
        ),
        ("把这段话翻译成英文，帮我发给老板", ["把这段话翻译成英文", "帮我发给老板"]),
    ],
)
def test_each_request_of_a_chinese_step_is_a_part(step: str, parts: list[str]) -> None:
    assert step_parts(step) == parts


@pytest.mark.parametrize(
    "step",
    [
        "再见",
        "不再帮我订了",
        "看看我卡里还有多少钱",
        "明天北京和天津会下雨吗？",
        "把客厅和卧室的灯都关掉",
    ],
)
def test_a_single_chinese_request_stays_one_part(step: str) -> None:
    assert step_parts(step) == [step]


@pytest.mark.parametrize(
    ("step", "parts"),
    [
        (
            "Check the weather in Shanghai，然后提醒我带伞",
            ["Check the weather in Shanghai", "然后提醒我带伞"],
        ),
        (
            "查一下上海的天气 and remind me to bring an umbrella",
            ["查一下上海的天气", "remind me to bring an umbrella"],
        ),
        (
            "How do I get to the 会展中心，再 call me a cab",
            ["How do I get to the 会展中心", "再 call me a cab"],
        ),
    ],
)
def test_each_request_of_a_mixed_step_is_a_part(step: str, parts: list[str]) -> None:
    assert step_parts(step) == parts


def test_parts_are_pieces_of_the_steps_own_text() -> None:
    step = "  Hi! Look up the weather in Lyon and add a reminder to pack an umbrella.  "
    text = step.strip()
    spans = step_parts_spans(text)
    assert [text[b:e] for b, e in spans] == step_parts(step)
    assert step_parts(step) == [
        "Hi! Look up the weather in Lyon",
        "add a reminder to pack an umbrella.",
    ]


def test_at_most_max_parts_the_last_holding_the_rest() -> None:
    step = " ".join(f"Send report {n} to the team." for n in range(12))
    parts = step_parts(step)
    assert len(parts) == MAX_PARTS
    assert parts[-1].startswith("Send report 7") and parts[-1].endswith("report 11 to the team.")


def test_query_texts_adds_the_parts_only_for_a_step_of_several() -> None:
    assert query_texts("weather in Paris") == ["weather in Paris"]
    multi = "Get the weather in Paris. Then book a table for two tonight."
    assert query_texts(multi) == [multi, *step_parts(multi)]
    assert len(query_texts(multi)) == 3
    assert query_texts(multi, split=False) == [multi]
