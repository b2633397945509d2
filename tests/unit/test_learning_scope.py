"""Bounded influence over learning, without a server: the exam's per-key cap (hand-computed),
the scope of a model (app/learning/scope.py), whose routes a served model moves
(``Learned.moves``), and the guard's verdict on one key's reports and on several keys'
(app/learning/guard.py, fake encoder): the blocks it judges, each by a challenger trained
only on older steps, and what serves when it promotes (the procedure, trained on every
step)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from app.embedding.encoders import make_encoder
from app.learning.exam import HeldOut
from app.learning.guard import MIN_TRAINING, challenge, time_blocks, trained_model
from app.learning.scope import scope_of
from app.learning.training import DEFAULT_TREES
from app.loop.memory import RememberedStep
from app.loop.trust import key_capped
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
)
from app.routing.reranker import Bank, Learned, Reranker
from tests.api.test_learning import PHRASES, WORDS
from tests.unit.test_reranker import stump

NOW = datetime(2026, 12, 3, tzinfo=UTC)


def remembered(tool: str, text: str, keys: set[str], n: int = 0) -> RememberedStep:
    return RememberedStep(tool, text, 1.0, 1, f"r{n}", NOW + timedelta(minutes=n), frozenset(keys))


def test_one_key_alone_passes_nothing_and_counts_no_more_than_another() -> None:
    assert key_capped({"a": (10.0, 0.0)}, 3) == (0.0, 0.0)
    assert key_capped({"a": (10.0, 0.0), "b": (9.0, 0.0)}, 3) == (0.0, 0.0)
    # decided: a 10, b 2, c 2; the third busiest's 2 caps a at 2 of its 10 (a fifth of each)
    votes = {"a": (9.0, 1.0), "b": (2.0, 0.0), "c": (1.0, 1.0)}
    assert key_capped(votes, 3) == pytest.approx((1.8 + 2 + 1, 0.2 + 0 + 1))
    assert key_capped(votes, 1) == (12.0, 2.0)  # trust_keys 1: the plain sums


def test_a_tool_moves_for_all_when_enough_keys_report_it_for_one_when_it_alone_did() -> None:
    steps = [
        remembered("t1", "s1", {"a"}),
        remembered("t1", "s2", {"b", "c"}),
        remembered("t2", "s3", {"a"}),
        remembered("t2", "s4", {"a"}),
        remembered("t3", "s5", {"a", "b"}),
    ]
    scope = scope_of(steps, 3)
    assert scope.confirmed == {"t1"}  # a, b and c
    assert scope.own == {"a": {"t2"}}  # t3: two keys, too few for all and not one's own
    assert scope_of(steps, 1).confirmed == {"t1", "t2", "t3"} and scope_of(steps, 1).own == {}


def test_a_served_model_moves_the_confirmed_tools_and_the_keys_own() -> None:
    tools = ["t0", "t1", "t2", "t3"]
    bank = Bank.build(np.eye(4, dtype=np.float32), tools, [1.0] * 4, tools)
    ranker = Reranker(stump(0, 0.0, 0.0, 0.0), bank, 0.1)
    model = Learned(ranker, confirmed=frozenset({"t1"}), own={"a": frozenset({"t2"})})
    assert model.for_key(None).moves() == {"t1"}
    assert model.for_key("a").moves() == {"t1", "t2"}
    assert model.for_key("b").moves() == {"t1"}
    assert Learned(ranker).moves() == set(tools)
    alone = dataclasses.replace(model, confirmed=frozenset())
    assert alone.for_key(None).moves() == set() and alone.for_key("a").moves() == {"t2"}


def steps_of(keys: list[str], rounds: int = 16) -> list[RememberedStep]:
    """tests/api/test_learning.py's steps (five tools the cold router cannot tell apart), the
    keys in turn."""
    out = []
    for i in range(rounds):
        for n, (tool, (_, phrase)) in enumerate(PHRASES.items()):
            text = f"{phrase} {WORDS[i]} {WORDS[(i * 7 + 3) % len(WORDS)]}"
            number = i * len(PHRASES) + n
            out.append(remembered(tool, text, {keys[number % len(keys)]}, number))
    return out


def judged(keys: list[str], needed: int) -> tuple[Learned | None, dict[str, object]]:
    encoder = make_encoder("fake")
    docs = [ToolDoc(name, text, text) for name, (text, _) in PHRASES.items()]
    config = RouterConfig()
    index = RouterIndex.build(docs, encoder.encode([embedding_text(d) for d in docs]), config)
    steps = steps_of(keys)
    vectors = np.asarray(encoder.encode([s.text for s in steps]), dtype=np.float32)
    learned, verdict = challenge(index, steps, vectors, needed, config, None)
    return learned, verdict.summary()


def test_one_keys_reports_serve_its_own_routes_only() -> None:
    learned, verdict = judged(["a"], 3)
    assert verdict["promoted"] is True and verdict["shared"] is False, verdict
    assert verdict["confirmed_tools"] == 0 and verdict["own_tools"] == len(PHRASES)
    assert learned is not None
    assert learned.for_key("a").moves() == set(PHRASES)
    assert learned.for_key("b").moves() == set() and learned.for_key(None).moves() == set()


def test_what_three_keys_agree_on_serves_every_key() -> None:
    learned, verdict = judged(["a", "b", "c"], 3)
    assert verdict["promoted"] is True and verdict["shared"] is True, verdict
    assert learned is not None and learned.for_key("z").moves() == set(PHRASES)
    other = verdict["other_keys"]
    assert isinstance(other, dict) and other["wins"] > other["losses"]


def test_two_keys_are_too_few_to_serve_anyone_else() -> None:
    learned, verdict = judged(["a", "b"], 3)
    assert verdict["shared"] is False, verdict
    assert learned is not None and learned.for_key("z").moves() == set()


def test_trusting_every_report_serves_every_key_as_before() -> None:
    learned, verdict = judged(["a"], 1)
    assert verdict["promoted"] is True and verdict["shared"] is True, verdict
    assert learned is not None and learned.for_key("z").moves() == set(PHRASES)


def test_each_block_is_judged_by_a_challenger_trained_only_on_older_steps() -> None:
    steps = steps_of(["a", "b", "c"])  # 80 steps, one a minute
    blocks = time_blocks(steps, 6, 0.1)
    newest = sorted(range(len(steps)), key=lambda i: steps[i].last_seen)
    assert [len(held) for _, held in blocks] == [10] * 6  # at least MIN_HELD_OUT each
    assert sorted(i for _, held in blocks for i in held) == sorted(newest[-60:])
    for older, held in blocks:
        assert max(steps[i].last_seen for i in older) < min(steps[i].last_seen for i in held)
        assert sorted(older + held) == sorted(newest[: len(older) + len(held)])
    few = time_blocks(steps[:40], 6, 0.1)  # fewer blocks when too few steps are older
    assert len(few) == 3 and min(len(older) for older, _ in few) >= MIN_TRAINING


def test_a_text_s_steps_are_held_out_together_and_right_on_any_of_its_tools() -> None:
    """Two tools reported for one text are two remembered steps: never one trained on and
    the other held out, and held out as one step, right when the top is either tool."""
    steps = steps_of(["a", "b", "c"])  # 80 steps, one a minute
    twin = dataclasses.replace(
        steps[5], tool="t_other", last_seen=steps[70].last_seen, keys=frozenset({"z"})
    )
    steps = [*steps, twin]  # steps[5]'s text, also reported (later) for another tool
    for older, held in time_blocks(steps, 6, 0.1):
        texts = {steps[i].text for i in held}
        assert not any(steps[i].text in texts for i in older)
    encoder = make_encoder("fake")
    docs = [ToolDoc(name, text, text) for name, (text, _) in PHRASES.items()]
    config = RouterConfig()
    index = RouterIndex.build(docs, encoder.encode([embedding_text(d) for d in docs]), config)
    vectors = np.asarray(encoder.encode([s.text for s in steps]), dtype=np.float32)
    exam = HeldOut(index, steps, vectors, [5, len(steps) - 1], config)
    assert exam.positions == [5] and exam.tools[5] == {steps[5].tool, "t_other"}
    assert exam.keys[5] == steps[5].keys | twin.keys


def test_a_promoted_procedure_serves_trained_on_every_step() -> None:
    """The judged challengers were trained on older steps; what serves is the same training
    on every remembered step (the newest included): its bank holds them all."""
    learned, verdict = judged(["a", "b", "c"], 3)
    assert verdict["promoted"] is True and verdict["held_out"] == 60, verdict
    assert learned is not None and len(learned.ranker.bank) == 80 == verdict["trained_on"]
    assert learned.calibration is not None or verdict["ece_after"] is None


def test_the_exam_routes_each_step_cold_once_and_scores_as_routing_each_view() -> None:
    """The exam reads one cold answer a step for every view (``HeldOut.cold``): each view's
    score is what routing the step through the pipeline with that model serving, as that
    key, gives (``Router.route``)."""
    encoder = make_encoder("fake")
    docs = [ToolDoc(name, text, text) for name, (text, _) in PHRASES.items()]
    config = RouterConfig()
    index = RouterIndex.build(docs, encoder.encode([embedding_text(d) for d in docs]), config)
    steps = steps_of(["a", "b", "c"])
    vectors = np.asarray(encoder.encode([s.text for s in steps]), dtype=np.float32)
    older, held = time_blocks(steps, 1, 0.25)[0]
    model = trained_model(index, steps, vectors, older, 3, config, DEFAULT_TREES, {})
    alone = dataclasses.replace(model, confirmed=frozenset())
    exam = HeldOut(index, steps, vectors, held, config)
    router = Router(config)
    for learned in (None, model, alone):
        view = NamespaceView(index, learned=learned)
        for own in (False, True):
            routed = [
                router.route(
                    view, steps[i].text, vectors[i], RouteOptions(k=3, key=exam.key(i, own))
                )
                for i in held
            ]
            score = exam.score(learned, own)
            assert score.hit == tuple(
                bool(r) and r[0].name == steps[i].tool for i, r in zip(held, routed, strict=True)
            )
            assert score.confidence == tuple(r[0].confidence if r else 0.0 for r in routed)
            assert score.spoke == tuple(bool(r) and "learned" in r[0].stages for r in routed)
    assert set(exam._cold) == {3, model.ranker.depth}  # one cold route a step and depth
    assert any(exam.score(model, True).spoke)
