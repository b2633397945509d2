"""The learned adapter (app/routing/adapter.py): its gradient, what training moves, and that
it moves nothing for a tool without reports."""

from __future__ import annotations

import numpy as np
import pytest

from app.routing import NamespaceView, RouteOptions, Router, RouterConfig, RouterIndex, ToolDoc
from app.routing.adapter import (
    Adapter,
    Learned,
    Pairs,
    Training,
    anchors,
    joined,
    loss_and_gradient,
    train,
)

CONFIG = RouterConfig()


def unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def test_the_gradient_is_the_losss_derivative() -> None:
    rng = np.random.default_rng(1)
    dim, m, n = 5, 4, 6
    tools = unit(rng.normal(size=(m, dim)))
    steps = unit(rng.normal(size=(n, dim)))
    labels = rng.integers(0, m, n)
    weights = rng.uniform(0.2, 1.0, n).astype(np.float32)
    matrix = (np.eye(dim) + 0.1 * rng.normal(size=(dim, dim))).astype(np.float64)

    def loss(w: np.ndarray) -> float:
        return loss_and_gradient(w, steps, labels, weights, tools, 0.5, 0.01)[0]

    _, gradient = loss_and_gradient(
        matrix.astype(np.float32), steps, labels, weights, tools, 0.5, 0.01
    )
    numeric = np.zeros_like(matrix)
    for i in range(dim):
        for j in range(dim):
            step = np.zeros_like(matrix)
            step[i, j] = 1e-3
            numeric[i, j] = (loss(matrix + step) - loss(matrix - step)) / 2e-3
    np.testing.assert_allclose(gradient, numeric, atol=2e-3, rtol=2e-2)


def confusable() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three tools; steps for tool 0 sit nearer tool 1 than tool 0."""
    tools = unit(np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], dtype=np.float32))
    rng = np.random.default_rng(0)
    steps = unit(np.array([0.5, 0.8, 0.0, 0.3]) + 0.05 * rng.normal(size=(40, 4)))
    return tools, steps, np.zeros(40, dtype=np.int64)


def test_training_brings_reported_steps_to_their_tool() -> None:
    tools, steps, labels = confusable()
    assert (np.argmax(steps @ tools.T, axis=1) == 1).all()  # before: every step nearer tool 1
    pairs = joined(Pairs(steps, labels, np.ones(40, np.float32)), anchors(tools))
    adapter = train(pairs, tools, ["t0"], Training(epochs=60, batch=16, learning_rate=1e-2))
    moved = adapter.adapt(steps)
    assert (np.argmax(moved @ tools.T, axis=1) == 0).mean() > 0.9
    # anchored: each card's own vector still finds its own tool
    assert (np.argmax(adapter.adapt(tools) @ tools.T, axis=1) == np.arange(3)).all()


def test_only_tools_with_reports_get_a_learned_part() -> None:
    tools, steps, labels = confusable()
    pairs = joined(Pairs(steps, labels, np.ones(40, np.float32)), anchors(tools))
    adapter = train(pairs, tools, ["t0"], Training(epochs=60, batch=16, learning_rate=1e-2))
    part = adapter.learned_contribution(steps[0], tools, np.array([True, False, False]), 2.0)
    assert part[0] > 0 and part[1] == 0 and part[2] == 0


def index_of(tools: np.ndarray) -> RouterIndex:
    docs = [
        ToolDoc(name=f"t{i}", summary=f"tool {i}", description="does things")
        for i in range(len(tools))
    ]
    return RouterIndex.build(docs, tools, CONFIG)


def test_a_served_adapter_routes_reported_steps_to_their_tool() -> None:
    tools, steps, labels = confusable()
    index = index_of(tools)
    pairs = joined(Pairs(steps, labels, np.ones(40, np.float32)), anchors(tools))
    adapter = train(pairs, tools, ["t0"], Training(epochs=60, batch=16, learning_rate=1e-2))
    before = Router(CONFIG).route(NamespaceView(index), "do it", steps[0], RouteOptions(k=3))
    after = Router(CONFIG).route(
        NamespaceView(index, learned=Learned(adapter, weight=5.0)),
        "do it",
        steps[0],
        RouteOptions(k=3),
    )
    assert before[0].name == "t1" and "learned" not in before[0].stages
    assert after[0].name == "t0" and after[0].stages["learned"] > 0
    assert after[0].score == pytest.approx(sum(after[0].stages.values()), abs=1e-5)


def test_an_identity_adapter_changes_no_score() -> None:
    tools, steps, _ = confusable()
    index = index_of(tools)
    plain = Router(CONFIG).route(NamespaceView(index), "do it", steps[3], RouteOptions(k=3))
    learned = Learned(Adapter(np.eye(4, dtype=np.float32), frozenset({"t0", "t1", "t2"})))
    same = Router(CONFIG).route(
        NamespaceView(index, learned=learned), "do it", steps[3], RouteOptions(k=3)
    )
    assert [c.name for c in same] == [c.name for c in plain]
    assert [c.score for c in same] == pytest.approx([c.score for c in plain], abs=1e-6)
    assert [c.confidence for c in same] == [c.confidence for c in plain]


def test_an_adapter_of_another_dimension_is_not_read() -> None:
    tools, steps, _ = confusable()
    index = index_of(tools)
    other = Learned(Adapter(np.eye(3, dtype=np.float32), frozenset({"t0"})))
    answer = Router(CONFIG).route(
        NamespaceView(index, learned=other), "do it", steps[0], RouteOptions(k=3)
    )
    assert all(c.stages["learned"] == 0 for c in answer)


def test_the_weights_round_trip_through_bytes() -> None:
    rng = np.random.default_rng(3)
    adapter = Adapter(rng.normal(size=(6, 6)).astype(np.float32), frozenset({"a"}))
    back = Adapter.from_bytes(adapter.to_bytes(), 6, ["a"])
    np.testing.assert_array_equal(back.matrix, adapter.matrix)
    assert back.digest() == adapter.digest() and back.tools == {"a"}
    with pytest.raises(ValueError, match="36 weights"):
        Adapter.from_bytes(adapter.to_bytes()[:-4], 6, ["a"])


def test_a_large_namespace_trains_on_sampled_tools_and_still_learns() -> None:
    tools, steps, labels = confusable()
    pairs = joined(Pairs(steps, labels, np.ones(40, np.float32)), anchors(tools))
    sampled = Training(epochs=60, batch=16, learning_rate=1e-2, full_softmax=2, sample=2, hard=1)
    adapter = train(pairs, tools, ["t0"], sampled)
    assert (np.argmax(adapter.adapt(steps) @ tools.T, axis=1) == 0).mean() > 0.9
