"""The cosine batcher: the same rows as numpy alone, one matrix product for concurrent routes."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from app.embedding.cosines import CosineBatcher, Int8Matrix, principal_basis
from app.routing.signals import gemv_rows
from app.settings import Settings

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
        original = batcher.product

        def product(matrix: np.ndarray, unit: np.ndarray, requests: int = 1) -> np.ndarray:
            self.batches.append(requests)  # how many routes' rows this one product serves
            if len(self.batches) == 1:
                self.entered.set()
                assert self.release.wait(10)
            return original(matrix, unit, requests)

        batcher.product = product  # type: ignore[method-assign]


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


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_large_matrix_is_scored_in_int8_within_a_small_error() -> None:
    matrix, queries = unit_rows(6000, 96, 1), unit_rows(3, 96, 2)
    batcher = CosineBatcher(int8_min_tools=5000)
    batcher.prepare(matrix)
    assert batcher.approximate(matrix) and not batcher.approximate(matrix.copy())
    exact = matrix @ queries.T
    rows = batcher(matrix, queries)
    assert rows.shape == (3, 6000)
    error = np.abs(rows - exact.T)
    assert 0 < error.max() < 0.01  # really quantized, and close


def test_the_default_takes_the_int8_pass_from_3000_tools() -> None:
    """Where the first pass pays (bench/perf/int8_threshold.py: 0.75x the exact product's
    rank_step at 3,000 tools, 0.58-0.65x at 4,745 real ones, 0.85-0.95x at 2,000): the service's
    default gives a 3,000-tool namespace its int8 copy, and a smaller one none."""
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    batcher = CosineBatcher(
        int8_min_tools=settings.cosine_int8_min_tools, int8_dims=settings.cosine_int8_dims
    )
    large, small = unit_rows(3000, 96, 3), unit_rows(2999, 96, 4)
    batcher.prepare(large)
    batcher.prepare(small)
    assert batcher.approximate(large) and not batcher.approximate(small)


def low_rank_rows(n: int, dim: int, rank: int, noise: float, seed: int) -> np.ndarray:
    """Unit rows that mostly live in a ``rank``-dimensional subspace, as embeddings do."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((dim, rank)))[0].T
    rows = rng.standard_normal((n, rank)) @ basis + noise * rng.standard_normal((n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_the_projection_keeps_the_directions_the_rows_live_in() -> None:
    matrix = low_rank_rows(6000, 64, 12, 0.02, 6)
    basis = principal_basis(matrix, 12)
    assert basis is not None and basis.shape == (12, 64)
    np.testing.assert_allclose(basis @ basis.T, np.eye(12), atol=1e-5)  # orthonormal
    kept = np.linalg.norm(matrix @ basis.T, axis=1)
    assert kept.min() > 0.99  # nearly all of every row's length
    assert principal_basis(matrix, 0) is None and principal_basis(matrix, 64) is None
    queries = low_rank_rows(3, 64, 12, 0.02, 7)  # (the same subspace: same seed for it)
    queries = matrix[:3] + 0.1 * queries
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    batcher = CosineBatcher(int8_min_tools=5000, int8_dims=12)
    batcher.prepare(matrix)
    assert batcher._int8[id(matrix)].basis is not None
    error = np.abs(batcher(matrix, queries) - (matrix @ queries.T).T)
    assert error.max() < 0.02  # 12 of 64 dimensions in int8: close, not exact
    assert error.mean() > 1e-4


def test_a_small_matrix_or_a_zero_threshold_stays_float32() -> None:
    matrix = unit_rows(100, 16, 3)
    for batcher in (CosineBatcher(int8_min_tools=101), CosineBatcher(int8_min_tools=0)):
        batcher.prepare(matrix)
        assert not batcher._int8
        np.testing.assert_array_equal(batcher(matrix, matrix[:1]), gemv_rows(matrix, matrix[:1]))


def test_the_int8_copy_goes_with_its_matrix() -> None:
    batcher = CosineBatcher(int8_min_tools=10)
    matrix = unit_rows(20, 8, 4)
    batcher.prepare(matrix)
    assert len(batcher._int8) == 1
    del matrix
    gc.collect()
    assert not batcher._int8


def test_a_matrix_that_cannot_be_quantized_falls_back_to_float32(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: Int8Matrix, matrix: np.ndarray) -> None:
        raise MemoryError("no room")

    monkeypatch.setattr(Int8Matrix, "__init__", broken)
    batcher = CosineBatcher(int8_min_tools=10)
    matrix = unit_rows(20, 8, 5)
    batcher.prepare(matrix)  # logged, not raised: the index build goes on
    np.testing.assert_array_equal(batcher(matrix, matrix[:1]), gemv_rows(matrix, matrix[:1]))


def test_int8_products_do_not_saturate_on_cpus_without_vnni() -> None:
    """Rows whose largest weights sit side by side, as the query's do: each pair of
    products is as large as the quantization allows. An AVX2 kernel adds such pairs in
    int16; with full-range uint8 queries (until 2026-11-30) this failed on an AVX2-only CPU.
    """
    dim, n = 64, 5000
    rng = np.random.default_rng(5)
    matrix = rng.uniform(-0.05, 0.05, (n, dim)).astype(np.float32)
    matrix[:, :8] = 1.0  # the peak, in adjacent pairs
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = np.zeros((1, dim), dtype=np.float32)
    query[0, :8] = 1.0  # the peak too: uint8 255 in the old 8-bit scheme
    query[0, 8:] = rng.uniform(-0.05, 0.05, dim - 8)
    query /= np.linalg.norm(query)
    batcher = CosineBatcher(int8_min_tools=n)
    batcher.prepare(matrix)
    prepared = batcher._int8[id(matrix)]
    rows = prepared.cosines(query)
    exact = (matrix @ query.T).T
    assert np.abs(rows - exact).max() < 0.01


def decaying_rows(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit rows whose energy falls off with the direction (1/k), as embeddings' does, with a
    common offset (they share a mean direction)."""
    rng = np.random.default_rng(seed)
    axes = np.linalg.qr(np.random.default_rng(0).standard_normal((dim, dim)))[0].T
    rows = (rng.standard_normal((n, dim)) / np.sqrt(np.arange(1, dim + 1))) @ axes
    rows += 0.5 * axes[3]
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_moments_estimate_the_exact_rows_mean_and_spread() -> None:
    """8 int8 directions give rough cosines; 32 of 64 directions, a close mean and spread."""
    matrix, queries = decaying_rows(7000, 64, 8), decaying_rows(5, 64, 9)
    exact = queries @ matrix.T
    prepared = Int8Matrix(matrix, dims=8, moment_dims=32)
    rows, moments = prepared.product(queries)
    assert moments is not None and moments.shape == (5, 2)
    np.testing.assert_allclose(moments[:, 0], exact.mean(axis=1), atol=1e-6)  # exact
    spread = np.abs(moments[:, 1] / exact.std(axis=1) - 1)
    rows_spread = np.abs(rows.std(axis=1) / exact.std(axis=1) - 1)
    assert spread.max() < 0.005 and spread.mean() < rows_spread.mean() / 10
    # No projection, no estimate: the int8 rows of every dimension are close already.
    assert Int8Matrix(matrix).product(queries)[1] is None


def test_the_batcher_hands_each_route_its_own_moments() -> None:
    matrix, queries = decaying_rows(6000, 64, 10), decaying_rows(4, 64, 11)
    batcher = CosineBatcher(int8_min_tools=5000, int8_dims=8, moment_dims=32)
    batcher.prepare(matrix)
    alone = [batcher.with_moments(matrix, q[None]) for q in queries]
    stacked = batcher.shared(matrix, [q[None] for q in queries])
    for (rows, moments), shared, q in zip(alone, stacked, queries, strict=True):
        again, again_moments = shared.with_moments(matrix, q[None])  # type: ignore[attr-defined]
        np.testing.assert_array_equal(again, rows)  # int8 products: exact integers
        np.testing.assert_allclose(again_moments, moments, rtol=1e-6)
    assert batcher.with_moments(matrix.copy(), queries)[1] is None  # not prepared: exact rows


def test_moment_directions_beyond_the_matrix_keep_all_but_one() -> None:
    matrix, queries = decaying_rows(6000, 64, 12), decaying_rows(2, 64, 13)
    prepared = Int8Matrix(matrix, dims=8, moment_dims=1000)
    assert prepared.basis is not None and prepared.basis.shape == (63, 64)
    exact = queries @ matrix.T
    _, moments = prepared.product(queries)
    assert moments is not None
    np.testing.assert_allclose(moments[:, 1], exact.std(axis=1), rtol=2e-3)
    assert Int8Matrix(matrix, dims=64, moment_dims=32).basis is None  # every dimension in int8


def merged(previous: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A write's new matrix: one row of ``previous`` replaced, its last row dropped and a
    new row appended; and each row's source row in ``previous`` (-1: new)."""
    fresh = unit_rows(2, previous.shape[1], seed)
    matrix = np.vstack([previous[:-1], fresh[1:]])
    matrix[seed % 10] = fresh[0]
    source = np.arange(len(matrix), dtype=np.int64)
    source[seed % 10] = -1
    source[-1] = -1
    return matrix, source


def test_a_writes_copy_is_derived_in_the_background_through_the_writes_before_it() -> None:
    """Off the write: a merged matrix routes exactly until its copy is derived. Writes made
    while a copy is being derived wait for it and then make one copy, from the sources
    composed: the copy a derive at every write would reach, on the first fit."""
    batcher = CosineBatcher(int8_min_tools=10, int8_dims=8, moment_dims=16)
    m0 = unit_rows(600, 32, 5)  # 3 writes: far from a tenth of the rows, no refit
    batcher.prepare(m0)  # a first build: fitted at once
    assert batcher.prepared(m0)
    gate, derived = threading.Event(), []
    real = batcher._derives._derive

    def held(job: object) -> None:
        assert gate.wait(10)
        derived.append(job)
        real(job)  # type: ignore[arg-type]

    batcher._derives._derive = held
    m1, s1 = merged(m0, 1)
    batcher.prepare(m1, m0, s1)  # taken by the worker, held at the gate
    for _ in range(1000):
        if batcher._derives._current is not None:
            break
        threading.Event().wait(0.01)
    m2, s2 = merged(m1, 2)
    batcher.prepare(m2, m1, s2)  # waits for m1's copy
    m3, s3 = merged(m2, 3)
    batcher.prepare(m3, m2, s3)  # joins m2's job
    assert not batcher.prepared(m1) and not batcher.prepared(m3)
    query = unit_rows(1, 32, 9)
    np.testing.assert_array_equal(batcher(m3, query), gemv_rows(m3, query))  # exact meanwhile
    gate.set()
    for _ in range(1000):
        if not batcher.refitting():
            break
        threading.Event().wait(0.01)
    assert len(derived) == 2  # m1's, then m3's through m2: m2 itself is never derived
    assert batcher.prepared(m1) and not batcher.prepared(m2) and batcher.prepared(m3)
    fit = batcher._int8[id(m0)]
    stepwise = fit.derive(m1, s1, m0).derive(m2, s2, m1).derive(m3, s3, m2)
    copy = batcher._int8[id(m3)]
    assert copy.basis is fit.basis and 0 < copy.drift <= stepwise.drift  # (net changes)
    np.testing.assert_array_equal(copy._weights, stepwise._weights)
    np.testing.assert_allclose(copy._row_sum, stepwise._row_sum, atol=1e-9)
    np.testing.assert_allclose(copy.cosines(query), stepwise.cosines(query), atol=1e-6)
