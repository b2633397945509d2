"""Confidence never rises down an answer (issue 29 item 5), whatever the evidence: a property
test over random tools, steps, vectors and served rerankers through the pure pipeline."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from app.routing import NamespaceView, RouteOptions, Router, RouterConfig, RouterIndex, ToolDoc
from app.routing.calibration import MIN_LABELS, Calibration
from app.routing.reranker import FEATURES, LINKS, Bank, Learned, Reranker
from tests.unit.test_reranker import stump

WORDS = ["weather", "rain", "email", "send", "music", "play", "city", "pay", "file", "remind"]
CONFIG = RouterConfig()
DIM = 8

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
vectors = st.lists(st.floats(-1, 1, allow_nan=False), min_size=DIM, max_size=DIM)


@st.composite
def cases(draw: st.DrawFn) -> tuple:  # type: ignore[type-arg]
    n = draw(st.integers(1, 8))
    tools = [ToolDoc(name=f"t{i}", summary=draw(words), description=draw(words)) for i in range(n)]
    matrix = np.array([draw(vectors) for _ in range(n)], dtype=np.float32)
    index = RouterIndex.build(tools, matrix, CONFIG)
    step = draw(st.lists(st.sampled_from([*WORDS, "and", "then"]), min_size=1, max_size=12))
    query = np.array([draw(vectors)], dtype=np.float32)
    learned = None
    if draw(st.booleans()):  # a served reranker of reports, with its namespace's calibration
        reported = sorted(f"t{i}" for i in draw(st.sets(st.integers(0, n - 1), min_size=1)))
        rows = np.array([draw(vectors) for _ in reported], dtype=np.float32)
        bank = Bank.build(rows, reported, [1.0] * len(reported), [draw(words) for _ in reported])
        feature = draw(st.integers(0, len(FEATURES) - 1))
        forest = stump(feature, draw(st.floats(-1, 1)), draw(st.floats(-3, 3)), 1.0)
        # a binary model's sigmoid, or a ranker's softmax over the step's candidates
        forest = dataclasses.replace(forest, link=draw(st.sampled_from(LINKS)))
        outcomes = [draw(st.booleans()) for _ in range(MIN_LABELS)]
        calibration = Calibration.fit([i / MIN_LABELS for i in range(MIN_LABELS)], outcomes)
        learned = Learned(Reranker(forest, bank, draw(st.floats(0, 0.5))), calibration=calibration)
    return index, " ".join(step), query, draw(st.integers(1, 10)), learned


@settings(max_examples=200, deadline=None)
@given(cases(), st.booleans())
def test_confidence_never_rises_down_an_answer(case: tuple, split: bool) -> None:  # type: ignore[type-arg]
    index, step, query, k, learned = case
    answer = Router(CONFIG).route(
        NamespaceView(index, learned=learned),
        step,
        query,
        RouteOptions(k=k, split=split),
    )
    shown = [c.confidence for c in answer]
    assert all(b <= a for a, b in itertools.pairwise(shown)), shown
