"""One matrix product for the cosine rows of concurrent routes.

A route's embedding stage multiplies the namespace's tool matrix by its query vector: at
10,000 tools × 896 dimensions that streams 36 MB through the CPU for one row, about half of
a route's time, bound by memory bandwidth (docs/BENCHMARKS.md). Concurrent routes against
the same matrix are coalesced (leader/follower, as in batching.py): the leader stacks every
waiting request's rows into one GEMM, which reads the matrix once for all of them, and
hands each its rows.
Alone, a route is its own leader at once.

A large matrix also gets an approximate copy when the index is built (``prepare``): its rows
projected on their ``dims`` principal directions (128 of 896 by default) and quantized to
int8, with products on onnxruntime's integer GEMM (VNNI where the CPU has it). That is 128
bytes per tool instead of 3,584 (float32) or 896 (int8, every dimension): at 10,000 tools
1.3 MB instead of 36 or 9 MB. The projection, the query's quantization, the product and the
rescaling are one onnxruntime call.

Such rows are approximate, so the router recomputes in float32 the cosines that can decide
its answer (``app/routing/pipeline.py``, ``candidate_scores``; ``app/routing/signals.py``,
``exact_where_it_counts``): the approximation only picks which tools those are. The z-score
also needs each row's mean and spread over every tool, which an approximate row tells badly:
the copy estimates them from ``moment_dims`` (256) principal directions instead
(``Int8Matrix._moment_nodes``: the mean exact, the spread close; bench/quality/int8_fidelity.py),
and the batcher hands them over with the rows (``with_moments``).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.embedding.batching import LeaderFollower
from app.routing.signals import Cosines, gemv_rows

log = logging.getLogger(__name__)

# Query rows are quantized to -63…63 and sent as uint8 1…127 (see Int8Matrix).
QUERY_PEAK = 63.0
QUERY_ZERO = 64


def principal_directions(
    matrix: np.ndarray, dims: int, sample: int = 16_384
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The ``dims`` directions that keep the most of the rows' energy, as ``(dims, d)`` rows;
    the mean of ``(row · direction)²`` over the rows for each of them; and that mean over
    the ``d - dims`` other directions, on average.

    The top eigenvectors of ``MᵀM`` (uncentred: dot products, not distances, are kept) and
    its eigenvalues over the number of rows, from at most ``sample`` rows spread evenly over
    the matrix. ``None`` when ``dims`` is 0 or not below the matrix's dimension.
    """
    n, dim = matrix.shape
    if not 0 < dims < dim:
        return None
    rows = matrix[:: max(1, n // sample)][:sample]
    moment = np.zeros((dim, dim), dtype=np.float64)
    for start in range(0, len(rows), 2048):  # float64 sums, float32 temporaries of 7 MB
        part = np.asarray(rows[start : start + 2048], dtype=np.float32)
        moment += (part.T @ part).astype(np.float64)
    values, vectors = np.linalg.eigh(moment / max(len(rows), 1))  # ascending eigenvalues
    values, vectors = values[::-1], vectors[:, ::-1]
    rest = float(np.clip(values[dims:], 0.0, None).mean())
    energy = np.clip(values[:dims], 0.0, None)
    return np.ascontiguousarray(vectors[:, :dims].T, dtype=np.float32), energy, rest


def principal_basis(matrix: np.ndarray, dims: int, sample: int = 16_384) -> np.ndarray | None:
    """``principal_directions``' directions alone."""
    found = principal_directions(matrix, dims, sample)
    return None if found is None else found[0]


class Int8Matrix:
    """A tool matrix, projected on its principal directions (optional) and quantized to int8
    rows (one scale per tool), inside an onnxruntime session.

    ``cosines`` projects the query rows the same way, quantizes them to 7 bits (uint8 1…127,
    one scale per row, zero point 64), runs ``MatMulInteger`` against the prepacked int8
    matrix, and rescales: approximate cosines of every tool.

    Why 7 bits: without VNNI (e.g. AVX2-only CPUs), onnxruntime's u8×s8 kernel adds pairs of
    products in int16 (``vpmaddubsw``), which saturates above 32,767: with full-range uint8
    queries (up to 255 × 127 × 2 = 64,770) cosines came out visibly wrong on such a CPU.
    At most 127 × 127 × 2 = 32,258 cannot saturate, so every CPU gets the same integers.
    """

    basis: np.ndarray | None  # (directions, d): the fit; None: every dimension, unprojected
    _energy: np.ndarray | None
    _rest: float
    dims: int  # the int8 rows' dimensions
    drift: int  # rows changed since the fit
    _weights: np.ndarray
    _row_sum: np.ndarray

    def __init__(
        self,
        matrix: np.ndarray,
        dims: int = 0,
        moment_dims: int = 0,
        *,
        fitted: Int8Matrix | None = None,
        source: np.ndarray | None = None,
        previous: np.ndarray | None = None,
    ) -> None:
        """Quantize ``matrix``, fitting its principal directions (``dims``, ``moment_dims``).

        ``fitted``, ``source``, ``previous``: the copy of an earlier matrix (``previous``)
        whose rows this one keeps, ``source[i]`` being the earlier row of row ``i`` (-1 for
        a new row). The earlier fit (directions, energies) is kept and only the new rows are
        projected and quantized (``derive``); the mean row is this matrix's own, updated by
        the rows that came and went.
        """
        import onnxruntime as ort
        from onnx import TensorProto

        n, width = matrix.shape
        if fitted is not None:
            self.basis, self._energy, self._rest = fitted.basis, fitted._energy, fitted._rest
            self.dims, self.drift = fitted.dims, fitted.drift
        else:
            kept = max(dims, min(moment_dims, width - 1))  # (all of them: no projection)
            found = principal_directions(matrix, kept) if 0 < dims < width else None
            # The int8 rows keep the first ``dims`` coordinates; all of them (up to
            # moment_dims) estimate each query row's mean and spread (``moments``).
            self.basis = None if found is None else found[0]
            self._energy = None if found is None else found[1]
            self._rest = 0.0 if found is None else found[2]
            self.dims = width if self.basis is None else min(dims, len(self.basis))
            self.drift = 0  # rows changed since the fit (``derive``)
        self._row_sum = self._sum_of_rows(matrix, fitted, source, previous)
        self._mean_row = self._row_sum / max(n, 1)
        self.scale = np.empty(n, dtype=np.float32)
        self.offset = np.empty(n, dtype=np.float32)
        weights = np.empty((self.dims, n), dtype=np.int8)  # transposed: MatMulInteger's B is K × N
        rows = np.arange(n) if source is None else np.flatnonzero(source < 0)
        if fitted is not None and source is not None:
            old = np.flatnonzero(source >= 0)
            weights[:, old] = fitted._weights[:, source[old]]
            self.scale[old], self.offset[old] = (
                fitted.scale[source[old]],
                fitted.offset[source[old]],
            )
            self.drift += int(rows.size + fitted.scale.size - old.size)
        for start in range(0, rows.size, 4096):  # in slices: no float temporaries of the whole
            self._quantize(matrix, rows[start : start + 4096], weights)
        # The int8 matrix goes to onnxruntime as an external initializer (its buffer, not a
        # serialized copy): serializing it into the model held several copies of it at its
        # peak. onnxruntime may read the buffer for the session's
        # life, so it stays referenced here.
        self._weights = weights
        tools = TensorProto()
        tools.name, tools.data_type = "tools", TensorProto.INT8
        tools.dims.extend(weights.shape)
        tools.data_location = TensorProto.EXTERNAL
        tools.external_data.add(key="location", value="supplied-at-load")
        self._session: Any = ort.InferenceSession(
            self._graph(tools, width, self.dims, n).SerializeToString(),
            self._options(weights),
            providers=["CPUExecutionProvider"],
        )

    def derive(self, matrix: np.ndarray, source: np.ndarray, previous: np.ndarray) -> Int8Matrix:
        """The copy of ``matrix``, whose row ``i`` is row ``source[i]`` of ``previous`` (this
        copy's matrix; -1: a new row), on this copy's fit: a merge's new index gets its copy
        in the time it takes to quantize the new rows and open a session."""
        return Int8Matrix(matrix, fitted=self, source=source, previous=previous)

    @staticmethod
    def _sum_of_rows(
        matrix: np.ndarray,
        fitted: Int8Matrix | None,
        source: np.ndarray | None,
        previous: np.ndarray | None,
    ) -> np.ndarray:
        """The float64 sum of ``matrix``'s rows: in full, or the earlier sum less the rows
        that went plus the ones that came (a few rows instead of all of them)."""
        if fitted is None or source is None or previous is None:
            total = np.zeros(matrix.shape[1], dtype=np.float64)
            for start in range(0, len(matrix), 4096):
                total += np.asarray(matrix[start : start + 4096], np.float64).sum(axis=0)
            return total
        gone = np.ones(len(previous), dtype=bool)
        gone[source[source >= 0]] = False
        came = np.flatnonzero(source < 0)
        total = fitted._row_sum - np.asarray(previous[gone], np.float64).sum(axis=0)
        return total + np.asarray(matrix[came], np.float64).sum(axis=0)

    def _quantize(self, matrix: np.ndarray, rows: np.ndarray, weights: np.ndarray) -> None:
        """Project and quantize ``matrix[rows]`` into the columns ``rows`` of ``weights``."""
        if not rows.size:
            return
        projection = None if self.basis is None else self.basis[: self.dims]
        part = np.asarray(matrix[rows], dtype=np.float32)
        part = part if projection is None else part @ projection.T
        peak = np.abs(part).max(axis=1)
        scale = (np.where(peak > 0, peak, 1.0) / 127.0).astype(np.float32)
        quantized = np.rint(part / scale[:, None]).astype(np.int8)
        weights[:, rows] = quantized.T
        self.scale[rows] = scale
        # The query is sent as uint8 with zero point QUERY_ZERO: each dot product then
        # carries QUERY_ZERO · (the tool's weight sum), removed after the integer product.
        self.offset[rows] = QUERY_ZERO * quantized.sum(axis=1, dtype=np.int64)

    def _options(self, weights: np.ndarray) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_external_initializers(["tools"], [ort.OrtValue.ortvalue_from_numpy(weights)])
        return options

    def _graph(self, tools: Any, width: int, dim: int, n: int) -> Any:
        """unit rows (r × width) → approximate cosines (r × n), in one onnxruntime call: the
        projection, the query's 7-bit quantization, ``MatMulInteger`` and the rescaling,
        the same operations in the same order as numpy would do them (one call instead of
        a dozen numpy calls)."""
        from onnx import TensorProto, helper, numpy_helper

        def const(name: str, value: Any, dtype: Any = np.float32) -> Any:
            return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)

        initializers = [
            tools,
            const("offset", self.offset),
            const("scale", self.scale),
            const("peak", QUERY_PEAK),
            const("zero", float(QUERY_ZERO)),
            const("tiny", 1e-30),
            const("axes", [1], np.int64),
        ]
        nodes = []
        projected, outputs = "unit", []
        if self.basis is not None:
            initializers.append(const("basis", np.ascontiguousarray(self.basis.T)))
            nodes.append(helper.make_node("MatMul", ["unit", "basis"], ["projected"]))
            nodes += self._moment_nodes(initializers, const)
            outputs.append(helper.make_tensor_value_info("moments", TensorProto.FLOAT, [None, 2]))
            projected = "projected"
            if dim < len(self.basis):  # the int8 rows keep the first dim coordinates
                initializers += [const("first", [0], np.int64), const("last", [dim], np.int64)]
                nodes.append(
                    helper.make_node("Slice", ["projected", "first", "last", "axes"], ["int8_part"])
                )
                projected = "int8_part"
        nodes += [
            helper.make_node("Abs", [projected], ["magnitude"]),
            helper.make_node("ReduceMax", ["magnitude", "axes"], ["row_peak"], keepdims=1),
            helper.make_node("Max", ["row_peak", "tiny"], ["safe_peak"]),  # a zero row: 0s
            helper.make_node("Div", ["safe_peak", "peak"], ["query_scale"]),
            helper.make_node("Div", [projected, "query_scale"], ["steps"]),
            helper.make_node("Round", ["steps"], ["rounded"]),
            helper.make_node("Add", ["rounded", "zero"], ["shifted"]),
            helper.make_node("Cast", ["shifted"], ["query"], to=TensorProto.UINT8),
            helper.make_node("MatMulInteger", ["query", "tools"], ["dots"]),
            helper.make_node("Cast", ["dots"], ["dots_float"], to=TensorProto.FLOAT),
            helper.make_node("Sub", ["dots_float", "offset"], ["centred"]),
            helper.make_node("Mul", ["centred", "scale"], ["scaled"]),
            helper.make_node("Mul", ["scaled", "query_scale"], ["cosines"]),
        ]
        graph = helper.make_graph(
            nodes,
            "cosines",
            [helper.make_tensor_value_info("unit", TensorProto.FLOAT, [None, width])],
            [helper.make_tensor_value_info("cosines", TensorProto.FLOAT, [None, n]), *outputs],
            initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = min(model.ir_version, 9)  # readable by older onnxruntime builds
        return model

    def cosines(self, unit: np.ndarray) -> np.ndarray:
        """``(r, n)`` approximate cosine rows of the unit query rows ``unit``."""
        return self.product(unit)[0]

    def product(self, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``cosines``, and each row's ``moments`` (``None`` without a projection)."""
        found = self._session.run(None, {"unit": np.asarray(unit, np.float32)})
        return found[0], (found[1] if len(found) > 1 else None)

    def _moment_nodes(self, initializers: list[Any], const: Any) -> list[Any]:
        """Graph nodes for ``moments`` (r × 2): each query row's mean and spread (population
        standard deviation) of its exact cosines with every tool, estimated without them.

        The mean is exact: ``q · (mean row)``. The mean square is ``qᵀ (MᵀM / n) q``: exact
        along the kept directions (``projected`` holds ``q``'s coordinates on them, weighted
        by each direction's energy), the rest of ``q``'s length at the other directions'
        average energy. This estimate is closer than the approximate row's own spread, from
        128 int8 directions (bench/quality/int8_fidelity.py); in the graph, not numpy's calls.
        """
        from onnx import helper

        assert self._energy is not None
        initializers += [
            const("mean_row", self._mean_row[:, None]),
            const("energy", self._energy[:, None]),
            const("rest_energy", self._rest),
            const("nothing", 0.0),
        ]
        node = helper.make_node
        return [
            node("MatMul", ["unit", "mean_row"], ["mean"]),
            node("Mul", ["projected", "projected"], ["kept_squares"]),
            node("MatMul", ["kept_squares", "energy"], ["kept_energy"]),
            node("ReduceSum", ["kept_squares", "axes"], ["kept_length"], keepdims=1),
            node("Mul", ["unit", "unit"], ["unit_squares"]),
            node("ReduceSum", ["unit_squares", "axes"], ["length"], keepdims=1),
            node("Sub", ["length", "kept_length"], ["rest_length"]),
            node("Max", ["rest_length", "nothing"], ["rest_length_"]),
            node("Mul", ["rest_length_", "rest_energy"], ["rest"]),
            node("Add", ["kept_energy", "rest"], ["mean_square"]),
            node("Mul", ["mean", "mean"], ["mean_squared"]),
            node("Sub", ["mean_square", "mean_squared"], ["variance"]),
            node("Max", ["variance", "nothing"], ["variance_"]),
            node("Sqrt", ["variance_"], ["spread"]),
            node("Concat", ["mean", "spread"], ["moments"], axis=1),
        ]


# Cosine rows and, for approximate rows, each row's estimated exact mean and spread.
Product = tuple[np.ndarray, np.ndarray | None]
# A derived int8 copy is refitted once this share of its rows changed since its fit.
REFIT_SHARE = 0.1


class _Worker:
    """One daemon thread, started when there is work and ending when there is none."""

    name = "worker"

    def __init__(self) -> None:
        self._running = False
        self._cond = threading.Condition()

    def _wake(self) -> None:
        """Under ``_cond``: start the thread if none runs, and tell it there is work."""
        if not self._running:
            self._running = True
            threading.Thread(target=self._loop, name=self.name, daemon=True).start()
        self._cond.notify_all()

    def busy(self) -> bool:
        with self._cond:
            return self._running

    def _loop(self) -> None:
        raise NotImplementedError


class _Refits(_Worker):
    """One background thread that refits the latest matrix asked for, once no prepare has
    happened for ``settle`` seconds (during a stream of writes, each new index's copy is
    derived at once and the fit, which takes far longer, waits)."""

    name = "int8-refit"

    def __init__(self, refit: Callable[[np.ndarray], None], settle: float) -> None:
        super().__init__()
        self._refit, self._settle = refit, settle
        self._wanted: weakref.ref[np.ndarray] | None = None
        self._asked = 0.0

    def want(self, matrix: np.ndarray) -> None:
        with self._cond:
            self._wanted, self._asked = weakref.ref(matrix), time.monotonic()
            self._wake()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while (wait := self._asked + self._settle - time.monotonic()) > 0:
                    self._cond.wait(wait)
                wanted, self._wanted = self._wanted, None
                matrix = None if wanted is None else wanted()
                if matrix is None:
                    self._running = False
                    return
            try:
                self._refit(matrix)
            except Exception:  # the derived copy stays: approximate, never wrong
                log.exception("could not refit a %s tool matrix", matrix.shape)
            del matrix


@dataclass(eq=False)
class _Derive:
    """A copy to make: ``matrix``'s (weak: a newer one may replace it first), derived from
    ``ancestor``'s, ``source[i]`` being row ``i``'s row there (-1: new); fitted from
    scratch without an ancestor (a namespace that just grew past ``int8_min_tools``)."""

    matrix: weakref.ref[np.ndarray]
    ancestor: np.ndarray | None
    source: np.ndarray


class _Derives(_Worker):
    """One background thread that derives each new matrix's int8 copy from its ancestor's
    (``Int8Matrix.derive``), off the write that made the matrix, which every single-card write
    waited for when it ran inline. Until a copy is there, routes against its matrix take the
    exact float32 product: slower, never wrong.

    A matrix made before its predecessor's copy was derived joins that one's job: its rows'
    sources are followed back to the ancestor (composed), and one copy is derived, for the
    newest matrix only."""

    name = "int8-derive"

    def __init__(self, derive: Callable[[_Derive], None]) -> None:
        super().__init__()
        self._derive = derive
        self._jobs: dict[int, _Derive] = {}  # by id() of the matrix to derive
        self._current: _Derive | None = None  # the job being derived

    def want(
        self, matrix: np.ndarray, previous: np.ndarray, source: np.ndarray, ancestor: bool
    ) -> None:
        """Make ``matrix``'s copy in the background: derived from ``previous``'s
        (``ancestor``: it has one, or is having it derived now), or from the ancestor of
        ``previous``'s own waiting job, else fitted from scratch."""
        with self._cond:
            earlier = self._jobs.get(id(previous))
            current = self._current
            if earlier is not None and earlier.matrix() is previous:
                del self._jobs[id(previous)]
                through = np.where(source >= 0, earlier.source[np.maximum(source, 0)], -1)
                job = _Derive(weakref.ref(matrix), earlier.ancestor, through)
            else:
                ancestor = ancestor or (current is not None and current.matrix() is previous)
                job = _Derive(weakref.ref(matrix), previous if ancestor else None, source)
            self._jobs[id(matrix)] = job
            self._wake()

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._jobs:
                    self._running = False
                    self._cond.notify_all()
                    return
                _, job = self._jobs.popitem()
                self._current = job
            try:
                self._derive(job)
            except Exception:  # routes keep the exact product for that matrix
                log.exception("could not make an int8 copy; its routes use float32")
            with self._cond:
                self._current = None
            del job


@dataclass(eq=False)
class _Precomputed:
    batcher: CosineBatcher
    matrix: np.ndarray
    unit: np.ndarray
    rows: np.ndarray
    moments: np.ndarray | None

    def __call__(self, matrix: np.ndarray, unit: np.ndarray) -> np.ndarray:
        return self.with_moments(matrix, unit)[0]

    def with_moments(self, matrix: np.ndarray, unit: np.ndarray) -> Product:
        if matrix is self.matrix and np.array_equal(unit, self.unit):
            return self.rows, self.moments
        return self.batcher.with_moments(matrix, unit)

    def approximate(self, matrix: np.ndarray) -> bool:
        return self.batcher.approximate(matrix)


@dataclass(eq=False)
class _Request:
    matrix: np.ndarray
    unit: np.ndarray
    product: Product | None = None
    error: BaseException | None = None
    done: bool = False


class CosineBatcher(LeaderFollower):
    """A ``Cosines`` function (see app/routing/signals.py) shared by concurrent routes.

    ``int8_dims``: the int8 copy's dimensions (0: every one, no projection);
    ``moment_dims``: the principal directions that estimate an approximate row's mean and
    spread (``Int8Matrix.moments``; at least ``int8_dims``).
    """

    def __init__(
        self,
        max_rows: int = 256,
        int8_min_tools: int | None = None,
        int8_dims: int = 0,
        moment_dims: int = 0,
        refit_after: float = 1.0,
    ) -> None:
        super().__init__()
        self.max_rows = max_rows
        self.int8_min_tools = int8_min_tools  # None or 0: always float32
        self.int8_dims = int8_dims  # 0: the int8 copy keeps every dimension
        self.moment_dims = moment_dims
        self._queue: list[_Request] = []
        self._int8: dict[int, Int8Matrix] = {}  # by id() of a live matrix
        self._refits = _Refits(self._refit, refit_after)
        self._derives = _Derives(self._derived)

    def prepare(
        self,
        matrix: np.ndarray,
        previous: np.ndarray | None = None,
        source: np.ndarray | None = None,
    ) -> None:
        """Give ``matrix`` its approximate copy if it is large enough (called when an index
        is built, before routes see it).

        A first build (no ``previous``, or an empty one) fits the copy now. A merge's
        matrix (``previous``: the matrix of the index it was merged from; ``source``: each
        row's row there, -1 for a new one) gets its copy in the background (``_Derives``),
        derived from ``previous``'s (``Int8Matrix.derive``: only the new rows quantized, on
        the earlier fit); until then its routes take the exact product. Once a tenth of its
        rows changed since that fit, it is refitted in the background after writes settle
        (``refit_after`` seconds without a prepare).
        """
        if not self.int8_min_tools or len(matrix) < self.int8_min_tools:
            return
        if previous is not None and source is not None and len(previous):
            self._derives.want(matrix, previous, source, ancestor=id(previous) in self._int8)
            return
        try:
            prepared = Int8Matrix(matrix, self.int8_dims, self.moment_dims)
        except Exception:  # an exact fallback, never a failed index build
            log.exception("could not quantize a %s tool matrix; using float32", matrix.shape)
            return
        self._keep(matrix, prepared)

    def _derived(self, job: _Derive) -> None:
        """Derive a queued copy (``_Derives``), if its matrix is still in use."""
        matrix = job.matrix()
        if matrix is None:
            return
        earlier = None if job.ancestor is None else self._int8.get(id(job.ancestor))
        if earlier is None or job.ancestor is None:
            prepared = Int8Matrix(matrix, self.int8_dims, self.moment_dims)
        else:
            prepared = earlier.derive(matrix, job.source, job.ancestor)
        self._keep(matrix, prepared)
        if prepared.drift > REFIT_SHARE * len(matrix):
            self._refits.want(matrix)

    def _keep(self, matrix: np.ndarray, prepared: Int8Matrix) -> None:
        key = id(matrix)
        fresh = key not in self._int8
        self._int8[key] = prepared
        if fresh:
            weakref.finalize(matrix, self._int8.pop, key, None)  # dropped with its matrix

    def _refit(self, matrix: np.ndarray) -> None:
        """A fresh fit for ``matrix``'s copy, as a full build makes it (still its copy's
        matrix: swapped in; a route in flight keeps the copy it took)."""
        if id(matrix) not in self._int8:
            return
        fitted = Int8Matrix(matrix, self.int8_dims, self.moment_dims)
        if id(matrix) in self._int8:
            self._int8[id(matrix)] = fitted

    def refitting(self) -> bool:
        """Whether a derived copy or a refit is waiting or running (for tests and
        benchmarks)."""
        return self._derives.busy() or self._refits.busy()

    def prepared(self, matrix: np.ndarray) -> bool:
        """Whether ``matrix`` has an int8 copy (its products are then exact integers, the
        same for a row alone or in a stack)."""
        return id(matrix) in self._int8

    def approximate(self, matrix: np.ndarray) -> bool:
        """Whether ``matrix``'s cosine rows are approximate (the router then recomputes the
        ones that can decide its answer: app/routing/signals.py)."""
        return self.prepared(matrix)

    def shared(self, matrix: np.ndarray, units: list[np.ndarray]) -> list[Cosines]:
        """One product for several routes' unit rows against one int8-prepared matrix.

        Returns a ``Cosines`` per route that hands back its own rows (a call with another
        matrix or other rows goes through the batcher as usual). The route executor ranks a
        batch's steps one after another: the tool matrix is read once for all of them.
        """
        found = self.stacked_product(matrix, units)
        return [
            _Precomputed(self, matrix, u, rows, moments)
            for u, (rows, moments) in zip(units, found, strict=True)
        ]

    def stacked_product(self, matrix: np.ndarray, units: list[np.ndarray]) -> list[Product]:
        """Each of ``units``' cosine rows (and moments) against ``matrix``, from one product
        of them all."""
        if len(units) == 1:  # a route alone: no stacking and splitting
            return [self.product(matrix, units[0])]
        rows, moments = self.product(matrix, np.vstack(units), len(units))
        bounds = np.cumsum([0] + [len(u) for u in units])
        return [
            (
                np.ascontiguousarray(rows[a:b]),
                None if moments is None else np.ascontiguousarray(moments[a:b]),
            )
            for a, b in itertools.pairwise(bounds)
        ]

    def product(self, matrix: np.ndarray, unit: np.ndarray, requests: int = 1) -> Product:
        """Cosine rows of ``unit`` against ``matrix``: approximate (int8, with their
        moments) if prepared, else float32 (row by row for one request's few rows, one GEMM
        for several requests')."""
        prepared = self._int8.get(id(matrix))
        if prepared is not None:
            return prepared.product(unit)
        if requests == 1:
            return gemv_rows(matrix, unit), None
        return (matrix @ unit.T).T, None  # one pass over the tool matrix

    def __call__(self, matrix: np.ndarray, unit: np.ndarray) -> np.ndarray:
        return self.with_moments(matrix, unit)[0]

    def with_moments(self, matrix: np.ndarray, unit: np.ndarray) -> Product:
        """The cosine rows, and for approximate ones each row's estimated exact mean and
        spread over the tools (``(r, 2)``; ``None`` for exact rows)."""
        with self._cond:  # alone: lead at once, without a queued request
            alone = not self._queue and self._running < self.parallel
            self._running += alone
        if alone:
            try:
                return self.product(matrix, unit)
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()
        request = _Request(matrix, unit)
        with self._cond:
            self._queue.append(request)
            self._serve_until(lambda: request.done)
        if request.error is not None:
            raise request.error
        assert request.product is not None
        return request.product

    def _pending(self) -> bool:
        return bool(self._queue)

    def _take(self) -> list[_Request]:
        """The oldest request and every other one against the same matrix, up to max_rows."""
        matrix = self._queue[0].matrix
        batch: list[_Request] = []
        rest: list[_Request] = []
        rows = 0
        for request in self._queue:
            if request.matrix is matrix and (
                not batch or rows + len(request.unit) <= self.max_rows
            ):
                batch.append(request)
                rows += len(request.unit)
            else:
                rest.append(request)
        self._queue = rest
        return batch

    def _run(self, batch: list[_Request]) -> None:
        try:
            products = self.stacked_product(batch[0].matrix, [r.unit for r in batch])
        except BaseException as exc:
            for request in batch:
                request.error, request.done = exc, True
            return
        for request, product in zip(batch, products, strict=True):
            request.product, request.done = product, True
