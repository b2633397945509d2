"""The batching encoder: same rows as the inner encoder, fewer model calls under concurrency."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from app.batching import BatchingEncoder
from app.encoders import make_encoder


class GatedEncoder:
    """Wraps the fake encoder; its first call blocks until released, and calls are recorded."""

    def __init__(self) -> None:
        self.inner = make_encoder("fake")
        self.name, self.dim = self.inner.name, self.inner.dim
        self.calls: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(10)
        if any(t == "boom" for t in texts):
            raise RuntimeError("model failed")
        return self.inner.encode(texts)


def test_alone_it_is_the_inner_encoder() -> None:
    inner = make_encoder("fake")
    batching = BatchingEncoder(inner)
    for text in ["a b", "c", ""]:
        assert np.array_equal(batching.encode([text]), inner.encode([text]))
    assert np.array_equal(batching.encode(["a", "b"]), inner.encode(["a", "b"]))


def test_concurrent_calls_share_one_model_call() -> None:
    gated = GatedEncoder()
    batching = BatchingEncoder(gated)
    texts = [f"query number {i}" for i in range(9)]
    results: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        results[i] = batching.encode([texts[i]])[0]

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert gated.entered.wait(10)  # the leader is inside the model
    others = [threading.Thread(target=call, args=(i,)) for i in range(1, 9)]
    for thread in others:
        thread.start()
    while len(batching._queue) < 8:  # all eight are queued behind the leader
        threading.Event().wait(0.001)
    gated.release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert gated.calls == [1, 8]
    for i, text in enumerate(texts):
        assert np.array_equal(results[i], gated.inner.encode([text])[0])


def test_a_failure_reaches_its_caller_and_the_encoder_recovers() -> None:
    gated = GatedEncoder()
    gated.release.set()
    batching = BatchingEncoder(gated)
    with pytest.raises(RuntimeError, match="model failed"):
        batching.encode(["boom"])
    assert batching.encode(["fine"]).shape == (1, gated.dim)
