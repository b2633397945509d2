"""Fusion: each normaliser and the segment-aware sum, computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from app.routing.diversity import mmr_order, top_indices
from app.routing.fusion import fuse, fuse_parts, normalise, relative_to_best, zscore
from app.routing.types import RouterConfig


def test_zscore_by_hand() -> None:
    # mean 2, population std sqrt(2/3)
    np.testing.assert_allclose(
        normalise(np.array([[1.0, 2.0, 3.0]]), "zscore"), [[-1.2247449, 0.0, 1.2247449]], rtol=1e-6
    )


def test_minmax_and_rrf_by_hand() -> None:
    rows = np.array([[2.0, 6.0, 4.0]])
    np.testing.assert_allclose(normalise(rows, "minmax"), [[0.0, 1.0, 0.5]])
    np.testing.assert_allclose(
        normalise(rows, "rrf", rrf_k=60), [[1 / 63, 1 / 61, 1 / 62]], rtol=1e-6
    )


@pytest.mark.parametrize("method", ["zscore", "minmax"])
def test_constant_rows_normalise_to_zero(method: str) -> None:
    assert not normalise(np.zeros((2, 4)), method).any()


def test_unknown_fusion_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fusion method"):
        normalise(np.zeros((1, 2)), "borda")


def test_fuse_whole_query_is_a_weighted_sum_of_zscores() -> None:
    config = RouterConfig(keyword_weight=0.25, embedding_weight=0.75)
    keyword = np.array([[0.0, 0.0, 3.0]])  # z: [-0.7071, -0.7071, 1.4142]
    embedding = np.array([[0.2, 0.4, 0.6]])  # z: [-1.2247, 0, 1.2247]
    kw, emb = fuse(keyword, embedding, config)
    np.testing.assert_allclose(
        kw, 0.25 * np.array([-0.70710678, -0.70710678, 1.41421356]), rtol=1e-5
    )
    np.testing.assert_allclose(emb, 0.75 * np.array([-1.22474487, 0.0, 1.22474487]), atol=1e-6)


def test_fuse_adds_each_tools_best_part() -> None:
    config = RouterConfig(keyword_weight=1.0, embedding_weight=0.0, part_weight=0.5)
    # row 0 whole step; rows 1-2 two parts: tool 0 serves the first, tool 1 the second,
    # tool 2 is a weak all-rounder that the whole step's row prefers to tool 1
    keyword = np.array([[4.0, 2.0, 2.5], [4.0, 0.0, 1.5], [0.0, 2.0, 1.0]])
    kw, emb = fuse(keyword, None, config)
    z_whole = np.array([1.37281295, -0.98058068, -0.39223227])
    z_best = np.array([1.31319831, 1.22474487, 0.0])  # tool 2's best part is part 2 (z 0)
    np.testing.assert_allclose(kw, z_whole + 0.5 * z_best, rtol=1e-5)
    assert not emb.any()
    assert kw[1] > kw[2]  # the second part's tool overtakes the all-rounder


def test_fuse_parts_gives_each_parts_own_fused_scores() -> None:
    config = RouterConfig(keyword_weight=0.5, embedding_weight=0.5)
    keyword = np.array([[4.0, 2.0, 2.5], [4.0, 0.0, 1.5], [0.0, 2.0, 1.0]])
    embedding = np.array([[0.3, 0.2, 0.1], [0.5, 0.1, 0.0], [0.1, 0.4, 0.1]])
    kw, emb, parts = fuse_parts(keyword, embedding, config)
    assert parts is not None and parts.shape == (2, 3)
    np.testing.assert_allclose(
        parts, 0.5 * zscore(keyword)[1:] + 0.5 * zscore(embedding)[1:], rtol=1e-5
    )
    np.testing.assert_allclose((kw, emb), fuse(keyword, embedding, config))
    # one text, or a lone embedding row for every part
    assert fuse_parts(keyword[:1], embedding[:1], config)[2] is None
    _, _, shared = fuse_parts(keyword, embedding[:1], config)
    assert shared is not None
    np.testing.assert_allclose(
        shared, 0.5 * zscore(keyword)[1:] + 0.5 * zscore(embedding[:1]), atol=1e-6
    )


def test_fuse_needs_some_scores() -> None:
    with pytest.raises(ValueError):
        fuse(None, None, RouterConfig())


def test_relative_to_best_scales_both_parts() -> None:
    kw, emb = relative_to_best(np.array([1.0, 0.5]), np.array([1.0, -0.5]))
    np.testing.assert_allclose(kw + emb, [1.0, 0.0])
    np.testing.assert_allclose(kw, [0.5, 0.25])
    zeros = np.zeros(2)
    assert relative_to_best(zeros, zeros)[0] is zeros


def test_top_indices_orders_and_breaks_ties_by_position() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.9])
    assert top_indices(scores, 3).tolist() == [1, 3, 2]
    assert top_indices(scores, 10).tolist() == [1, 3, 2, 0]
    assert top_indices(scores, 0).tolist() == []


def test_mmr_skips_a_near_duplicate() -> None:
    scores = np.array([1.0, 0.95, 0.7])
    vectors = np.array([[1.0, 0.0], [0.995, 0.0998749], [0.0, 1.0]])
    assert mmr_order(scores, vectors, 3, lam=1.0).tolist() == [0, 1, 2]
    assert mmr_order(scores, vectors, 3, lam=0.7).tolist() == [0, 2, 1]
