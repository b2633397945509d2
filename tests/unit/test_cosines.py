"""The cosine batcher: the same rows as numpy alone, one matrix product for concurrent routes."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from app.cosines import CosineBatcher
from app.routing.signals import gemv_rows

RNG = np.random.default_rng(3)
MATRIX = RNG.standard_normal((50, 8)).astype(np.float32)
OTHER = RNG.standard_normal((30, 8)).astype(np.float32)


def test_alone_it_is_a_plain_product() -> None:
    unit = RNG.standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_allclose(CosineBatcher()(MATRIX, unit), gemv_rows(MATRIX, unit), atol=1e-5)


class Gate:
    """Holds the batcher's first product until released, so the others queue behind it."""

    def __init__(self, batcher: CosineBatcher) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.batches: list[int] = []
        original = batcher._run

        def run(batch: list) -> None:  # type: ignore[type-arg]
            self.batches.append(len(batch))
            if len(self.batches) == 1:
                self.entered.set()
                assert self.release.wait(10)
            original(batch)

        batcher._run = run  # type: ignore[method-assign]


def test_concurrent_requests_share_one_product_per_matrix() -> None:
    batcher = CosineBatcher()
    gate = Gate(batcher)
    queries = [RNG.standard_normal((1 + i % 3, 8)).astype(np.float32) for i in range(7)]
    matrices = [MATRIX, MATRIX, OTHER, MATRIX, OTHER, MATRIX, MATRIX]
    results: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        results[i] = batcher(matrices[i], queries[i])

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert gate.entered.wait(10)
    others = [threading.Thread(target=call, args=(i,)) for i in range(1, 7)]
    for thread in others:
        thread.start()
    while len(batcher._queue) < 6:
        threading.Event().wait(0.001)
    gate.release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert gate.batches == [1, 4, 2]  # the four on MATRIX together, then the two on OTHER
    for i in range(7):
        np.testing.assert_allclose(results[i], gemv_rows(matrices[i], queries[i]), atol=1e-5)


def test_a_failure_reaches_its_caller_and_the_batcher_recovers() -> None:
    batcher = CosineBatcher()
    with pytest.raises(ValueError):
        batcher(MATRIX, RNG.standard_normal((1, 5)).astype(np.float32))  # wrong dimension
    assert batcher(MATRIX, np.ones((1, 8), dtype=np.float32)).shape == (1, 50)
