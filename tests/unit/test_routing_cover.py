"""Covering answers (``app/routing/cover.py``): each part of a step gets its best tool before
any part gets a second one; each candidate's part and its confidence as the tool for that
part, never rising down the answer. The deterministic fake encoder; the real model's
numbers are in docs/ROUTING.md ("Steps of several parts")."""

from __future__ import annotations

import numpy as np
import pytest

from app.embedding.encoders import FakeEncoder
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
    query_texts,
)
from app.routing.confidence import Evidence, non_increasing
from app.routing.cover import cover, relative_rows
from app.routing.diversity import mmr_order
from app.routing.types import Candidate

ENCODER = FakeEncoder(dim=256)
CONFIG = RouterConfig()


def tool(name: str, summary: str, description: str) -> ToolDoc:
    return ToolDoc(name=name, summary=summary, description=description)


# Four weather look-alikes that the first part of STEP fits twice over, and the one tool
# its second part needs.
TOOLS = (
    tool("weather_now", "Current weather in a city", "Temperature, wind and rain right now."),
    tool("weather_forecast", "Weather forecast for a city", "Rain, wind and temperature ahead."),
    tool("weather_alerts", "Weather alerts for a city", "Storm, wind and rain warnings."),
    tool("weather_history", "Past weather of a city", "Rain, wind and temperature of past days."),
    tool("create_reminder", "Set a reminder", "Notify the user at a time, e.g. remind me to pack."),
    tool("send_email", "Send an email", "Send an email message to an address."),
    tool("play_music", "Play music", "Play a song or a playlist."),
)
STEP = (
    "Will there be rain and wind in Lyon tomorrow, what is the weather forecast for the "
    "city, rain or wind, and remind me to pack an umbrella"
)


@pytest.fixture(scope="module")
def index() -> RouterIndex:
    return RouterIndex.build(TOOLS, ENCODER.encode([embedding_text(t) for t in TOOLS]), CONFIG)


def ask(index: RouterIndex, step: str, *, split: bool = True, **kwargs: object) -> list[Candidate]:
    texts = query_texts(step, split=split)
    return Router(CONFIG).route(
        NamespaceView(index),
        step,
        ENCODER.encode(texts),
        RouteOptions(split=split, **kwargs),
        texts=texts,
    )


def test_the_second_part_gets_its_tool_before_a_second_tool_for_the_first(
    index: RouterIndex,
) -> None:
    assert len(query_texts(STEP)) == 3  # the whole step and its two parts
    whole = [c.name for c in ask(index, STEP, k=2, split=False)]
    assert whole == ["weather_forecast", "weather_now"]  # one list: the first part twice
    covered = ask(index, STEP, k=2)
    assert [(c.name, c.part) for c in covered] == [
        ("weather_forecast", 0),
        ("create_reminder", 1),
    ]


def test_the_rest_follow_by_score_each_with_the_part_it_serves(index: RouterIndex) -> None:
    answer = ask(index, STEP, k=5)
    assert {c.name for c in answer[:2]} == {"weather_forecast", "create_reminder"}
    assert all(c.part in (0, 1) for c in answer)
    assert {c.part for c in answer if c.name.startswith("weather")} == {0}


def test_confidence_never_rises_down_a_covering_answer(index: RouterIndex) -> None:
    for k in (2, 3, 5, 7):
        confidence = [c.confidence for c in ask(index, STEP, k=k)]
        assert confidence == sorted(confidence, reverse=True)
    assert ask(index, STEP, k=2)[1].confidence > 0.5  # the reminder, as its part's tool


def test_a_one_part_step_is_answered_as_with_split_off(index: RouterIndex) -> None:
    for step in ("what is the weather forecast in Lyon", "play a song", "remind me to pack"):
        assert len(query_texts(step)) == 1
        split, whole = ask(index, step, k=4), ask(index, step, k=4, split=False)
        assert split == whole
        assert all(c.part is None for c in split)


def test_split_off_reads_a_step_of_several_parts_whole(index: RouterIndex) -> None:
    one = ask(index, STEP, k=3, split=False)
    assert all(c.part is None for c in one)
    alone = Router(CONFIG).route(
        NamespaceView(index), STEP, ENCODER.encode([STEP]), RouteOptions(k=3), texts=[STEP]
    )
    assert [c.name for c in alone] == [c.name for c in ask(index, STEP, k=3, split=False)]


def test_a_leader_reads_its_part_as_a_step_of_its_own(index: RouterIndex) -> None:
    """Its cosine, BM25 and coverage are those of routing the part alone."""
    reminder = next(c for c in ask(index, STEP, k=2) if c.name == "create_reminder")
    part = query_texts(STEP)[2]
    alone = next(c for c in ask(index, part, k=7) if c.name == "create_reminder")
    for field in ("cosine", "bm25", "coverage"):
        assert getattr(reminder.evidence, field) == pytest.approx(getattr(alone.evidence, field))
    assert reminder.evidence.part_cosine == reminder.evidence.cosine
    assert reminder.evidence.part_count == 1 and reminder.evidence.lead >= 0


def test_min_confidence_and_k_one_still_cover(index: RouterIndex) -> None:
    assert [c.name for c in ask(index, STEP, k=1)] == ["weather_forecast"]
    assert all(c.confidence >= 0.5 for c in ask(index, STEP, k=5, min_confidence=0.5))


# The covering order, by hand.


def test_cover_the_first_then_the_leaders_by_confidence_then_the_rest_by_score() -> None:
    part_scores = np.array(
        [
            [1.0, 0.9, 0.1, 0.0, 0.2, 0.0],  # part 0: position 0 leads
            [0.0, 0.1, 0.3, 1.0, 0.2, 0.0],  # part 1: position 3 leads
            [0.0, 0.0, 0.2, 0.1, 0.0, 1.0],  # part 2: position 5 leads
        ]
    )
    final = np.array([1.0, 0.95, 0.5, 0.4, 0.6, 0.3])
    found = cover(part_scores, [0.6, 0.7, 0.9], final, None, 5, 1.0)
    # the one list's first; the other leaders, more confident first; then by final
    assert found.order.tolist() == [0, 5, 3, 1, 4]
    assert found.part.tolist() == [0, 2, 1, 0, 0]  # the rest: the part each scores best in


def test_cover_a_shared_leader_and_fewer_slots_than_parts() -> None:
    part_scores = np.array([[1.0, 0.0, 0.5], [1.0, 0.2, 0.1], [0.0, 1.0, 0.3]])
    final = np.array([0.9, 0.5, 1.0])
    found = cover(part_scores, [0.4, 0.8, 0.7], final, None, 3, 1.0)
    assert found.order.tolist() == [2, 0, 1]  # 2 leads no part: first as the one list's best
    assert found.part.tolist() == [0, 1, 2]  # position 0 serves the part it is surer of
    assert cover(part_scores, [0.4, 0.8, 0.7], final, None, 1, 1.0).order.tolist() == [2]
    assert cover(part_scores, [0.4, 0.8, 0.7], final, None, 2, 1.0).order.tolist() == [2, 0]


def test_cover_fills_the_rest_by_mmr_after_the_leaders() -> None:
    vectors = np.eye(4, dtype=np.float32)
    vectors[1] = vectors[0]  # position 1 duplicates the leader 0
    part_scores = np.array([[1.0, 0.9, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    final = np.array([1.0, 0.99, 0.7, 0.5])
    found = cover(part_scores, [0.9, 0.8], final, vectors, 3, 0.5)
    assert found.order.tolist() == [0, 3, 2]
    assert mmr_order(final, vectors, 2, 0.5, first=[3]).tolist() == [3, 0]


def test_relative_rows_make_each_parts_best_one() -> None:
    rows = relative_rows(np.array([[2.0, 1.0], [-1.0, -2.0]]))
    assert rows.tolist() == [[1.0, 0.5], [-1.0, -2.0]]


def test_non_increasing_is_a_running_minimum() -> None:
    seen = Evidence(0.5, 0.5, 1.0, 0.5, 1.0, 0.0, 0.0, 10, 2, 0.0)
    answer = [
        Candidate(name, 1.0, {}, (), value, seen)
        for name, value in zip("abcd", (0.9, 0.4, 0.7, 0.1), strict=True)
    ]
    assert [c.confidence for c in non_increasing(answer)] == [0.9, 0.4, 0.4, 0.1]
    assert [c.name for c in non_increasing(answer)] == list("abcd")
