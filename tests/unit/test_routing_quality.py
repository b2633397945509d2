"""Quality with the real model on ``tests/data/mini_routing`` (16+2 cards, 42 queries).

The cards include look-alike pairs (current weather / forecast, convert / exchange rate,
e-mail / SMS, meeting / reminder, translate / detect language, user by e-mail / by id), a
pinned general web search and a Chinese card. The queries were written before looking at the
router's answers and all are kept, failures included: the full pipeline still misses q02
("How hot is it in Madrid…" → the hotel tool), q08 and q38 (meeting vs reminder: the reminder
card says "Not a meeting", which BM25 cannot read as a negation), q16 (the pinned search is
third, not first) and q26 (detect vs translate).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.embedding.encoders import Encoder, make_encoder
from app.routing import (
    ALL_STAGES,
    Candidate,
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
    query_texts,
)

pytestmark = pytest.mark.model
DATA = Path(__file__).resolve().parents[1] / "data" / "mini_routing"
CONFIG = RouterConfig()
# A stage alone is that stage without the step's own evidence (its values and action votes,
# which read neither BM25 nor the model): what each stage brings on its own.
BARE = dataclasses.replace(CONFIG, values_weight=0.0, action_weight=0.0)
ABLATIONS = {
    "full": (ALL_STAGES, CONFIG),
    "keyword": (frozenset({"keyword"}), BARE),
    "embedding": (frozenset({"embedding"}), BARE),
}


def read(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line]


def card(row: dict[str, Any]) -> ToolDoc:
    return ToolDoc(
        name=row["name"],
        summary=row.get("summary", ""),
        description=row["description"],
        tags=tuple(row.get("tags", ())),
        parameters=row.get("parameters") or {},
        pinned=row.get("pinned", False),
    )


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return make_encoder("minilm")


@pytest.fixture(scope="module")
def index(encoder: Encoder) -> RouterIndex:
    docs = [card(row) for row in read("tools.jsonl")]
    return RouterIndex.build(docs, encoder.encode([embedding_text(d) for d in docs]), CONFIG)


@pytest.fixture(scope="module")
def answers(index: RouterIndex, encoder: Encoder) -> dict[str, dict[str, list[Candidate]]]:
    """Query id → ablation → top-3."""
    out: dict[str, dict[str, list[Candidate]]] = {}
    for row in read("queries.jsonl"):
        vec = encoder.encode(query_texts(row["query"]))
        out[row["id"]] = {
            label: Router(config, stages).route(
                NamespaceView(index), row["query"], vec, RouteOptions(k=3)
            )
            for label, (stages, config) in ABLATIONS.items()
        }
    return out


def relevant() -> dict[str, set[str]]:
    return {row["id"]: set(row["relevant"]) for row in read("queries.jsonl")}


def tops(answers: dict[str, dict[str, list[Candidate]]], label: str) -> Iterator[tuple[str, str]]:
    for qid, by_label in answers.items():
        ranked = by_label[label]
        yield qid, ranked[0].name if ranked else ""


def test_full_pipeline_is_at_least_as_good_as_either_stage_alone(
    answers: dict[str, dict[str, list[Candidate]]],
) -> None:
    gold = relevant()
    hits = {label: sum(top in gold[q] for q, top in tops(answers, label)) for label in ABLATIONS}
    recall = {
        label: np.mean(
            [len(gold[q] & {c.name for c in by[label]}) / len(gold[q]) for q, by in answers.items()]
        )
        for label in ABLATIONS
    }
    assert hits["full"] >= max(hits["keyword"], hits["embedding"])
    assert hits["full"] >= 37  # of 42
    assert recall["full"] >= max(recall["keyword"], recall["embedding"])


@pytest.mark.parametrize(
    ("qid", "tool"),
    [
        ("q03", "convert_currency"),  # "Convert 250 EUR to JPY": BM25 says exchange rate
        ("q11", "book_hotel"),  # "somewhere to sleep": no keyword of the card
        ("q23", "translate_text"),  # "Convert this sentence to French": BM25 → currency
        # (q31, "Who is account 90017?": the keyword stage with the votes is right too since
        # the who vote lifts get_user_by_id, a tool of people; the full pipeline still is)
    ],
)
def test_full_pipeline_right_where_keywords_alone_are_wrong(
    answers: dict[str, dict[str, list[Candidate]]], qid: str, tool: str
) -> None:
    assert answers[qid]["full"][0].name == tool
    assert answers[qid]["keyword"][0].name != tool


def test_who_is_an_account_is_the_user_by_id(
    answers: dict[str, dict[str, list[Candidate]]],
) -> None:
    """ "Who is account 90017?": the e-mail twin needs an address; the step asks who."""
    assert answers["q31"]["full"][0].name == "get_user_by_id"
    assert answers["q31"]["full"][0].stages["people"] > 0


def test_the_keyword_stage_reads_a_value_as_its_kind(
    answers: dict[str, dict[str, list[Candidate]]],
) -> None:
    """ "Text +44 7700 900123 that I am running late": BM25 read "text" as translate_text
    until the number was read as "phone number" (parts.keyword_text), the SMS card's words."""
    assert answers["q07"]["keyword"][0].name == "send_sms"


def test_full_pipeline_right_where_the_embedding_alone_is_wrong(
    answers: dict[str, dict[str, list[Candidate]]],
) -> None:
    # "Add 'dentist' to my calendar tomorrow at 14:00": MiniLM prefers the reminder twin;
    # the card's own word "calendar" settles it.
    assert answers["q37"]["full"][0].name == "create_calendar_event"
    assert answers["q37"]["embedding"][0].name == "set_reminder"


def test_multi_ask_query_gets_one_tool_per_ask(
    answers: dict[str, dict[str, list[Candidate]]],
) -> None:
    top2 = {c.name for c in answers["q18"]["full"][:2]}
    assert top2 == {"get_current_weather", "translate_text"}


def test_no_keyword_match_brings_in_the_pinned_default(
    answers: dict[str, dict[str, list[Candidate]]],
) -> None:
    names = [c.name for c in answers["q16"]["full"]]  # "Who won the 1998 World Cup?"
    assert "web_search" in names
    assert answers["q16"]["full"][names.index("web_search")].stages["prior"] > 0


def test_chinese_query_finds_the_chinese_card(
    answers: dict[str, dict[str, list[Candidate]]],
) -> None:
    assert answers["q17"]["full"][0].name == "天气查询"


def test_missing_parameters_are_reported_on_real_answers(
    answers: dict[str, dict[str, list[Candidate]]],
) -> None:
    twin = {c.name: c for c in answers["q30"]["full"]}["get_user_by_email"]
    assert twin.missing_required == ("email",)
    assert twin.stages["penalty"] == pytest.approx(-CONFIG.missing_param_penalty)
    assert answers["q30"]["full"][0].name == "get_user_by_id"
