"""Query memory: steps that used a tool successfully vote for it (kNN; Tool2Vec, arXiv
2409.02141, represents a tool by the requests that used it).

A namespace's memory is a matrix of remembered step vectors (unit rows, grouped by tool)
with one weight per step in [0, 1] (decayed, capped evidence: ``app/loop/memory.py``). It is
no longer a vote of its own in a route: a namespace's reports move its routes only through
a reranker the guard promoted (``reranker.py``), whose features read the same steps. The
structure serves the cards' examples (``examples.py``: ``memory_votes``, each tool's best
step above a floor:

    agreement(s) = clip((cos(q, s) − floor) / (1 − floor), 0, 1)
    vote(t)      = max over t's steps s of weight(s) · agreement(s)

one product over the pool's rows: no loop over steps or tools) and the card doctor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from app.routing.signals import unit_rows

# Rows QueryMemory.build reads, makes unit-length and projects at a time: whole-size
# temporaries raised a large first build's peak memory (bench/perf/memory_parts.py,
# docs/BENCHMARKS.md).
_NORM_CHUNK = 4096
_SAMPLE = 16_384  # rows principal_basis fits the directions on
_GRAM_CHUNK = 2048  # rows principal_basis adds to MᵀM at a time
_ALL_COLUMNS = slice(None)


def grouping(
    tools: Sequence[str], weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How ``QueryMemory.build`` groups its rows: the distinct tools (sorted), the rows with
    weight in their kept order (by tool, stable), and each tool's offsets among them."""
    keep = np.flatnonzero(np.asarray(weights) > 0)
    if keep.size == 0:
        return np.asarray([], dtype=str), keep, np.zeros(1, dtype=np.int64)
    distinct, inverse = np.unique(np.asarray(tools)[keep], return_inverse=True)
    order = keep[np.argsort(inverse, kind="stable")]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(inverse)))).astype(np.int64)
    return distinct, order, offsets


def unit_projected(
    vectors: Rows,
    order: np.ndarray,
    columns: slice,
    basis: np.ndarray | None,
) -> np.ndarray:
    """Rows ``order`` of ``vectors`` on ``columns``, unit-length and projected on ``basis``
    (if any), made ``_NORM_CHUNK`` rows at a time straight into the result."""
    width = unit_chunk(vectors, order[:1], columns).shape[1]
    out = np.empty((order.size, width if basis is None else basis.shape[0]), np.float32)
    for start in range(0, order.size, _NORM_CHUNK):
        part = unit_chunk(vectors, order[start : start + _NORM_CHUNK], columns)
        if basis is None:
            out[start : start + len(part)] = part
        else:
            np.matmul(part, basis.T, out=out[start : start + len(part)])
    return out


def sample_rows(order: np.ndarray, sample: int = _SAMPLE) -> np.ndarray:
    """The rows (of ``order``) a basis is fitted on: every ``len // sample``-th, at most
    ``sample`` of them, as ``principal_basis`` takes them from the whole matrix."""
    return order[:: max(1, order.size // sample)][:sample]


@runtime_checkable
class RowSource(Protocol):
    """Rows read when asked, a chunk at a time (``ExampleCache``: from the embeddings table),
    so a build never holds every whole row at once."""

    def __len__(self) -> int: ...
    def take(self, rows: np.ndarray) -> np.ndarray: ...


Rows = np.ndarray | Sequence[np.ndarray] | RowSource


def unit_chunk(vectors: Rows, rows: np.ndarray, columns: slice) -> np.ndarray:
    """Rows ``rows`` of ``vectors`` on ``columns``, as a new float32 matrix of unit rows (a
    zero row stays zero). Row-wise norms: a row's values do not depend on its chunk."""
    if isinstance(vectors, np.ndarray):
        part = np.asarray(vectors[rows, columns], dtype=np.float32)  # a copy (integer index)
    elif isinstance(vectors, RowSource):
        part = np.array(vectors.take(rows)[:, columns], dtype=np.float32)
    else:
        part = np.array([vectors[i][columns] for i in rows.tolist()], dtype=np.float32)
    part = part.reshape(len(rows), -1)
    norms = np.linalg.norm(part, axis=1, keepdims=True)
    np.divide(part, np.where(norms > 0, norms, np.float32(1.0)), out=part)
    return part


@dataclass(frozen=True, slots=True)
class QueryMemory:
    """One namespace's remembered steps: ``vectors`` (m, d) unit rows grouped by tool,
    tool ``i``'s rows being ``offsets[i]:offsets[i + 1]``; ``weights`` (m,) in [0, 1]."""

    tools: tuple[str, ...]
    offsets: np.ndarray
    vectors: np.ndarray
    weights: np.ndarray
    positions: Mapping[str, int] = field(default_factory=dict)  # tool → its number
    basis: np.ndarray | None = None  # (dims, d): the rows are projected on it; None: not
    # The last index's columns aligned with this memory (``aligned``): one slot, swapped whole.
    _aligned: list[Alignment | None] = field(
        default_factory=lambda: [None], repr=False, compare=False
    )

    @classmethod
    def build(
        cls,
        tools: Sequence[str],
        vectors: Rows,
        weights: np.ndarray,
        dims: int = 0,
        basis: np.ndarray | None = None,
        columns: slice = _ALL_COLUMNS,
        kept: bool = False,
    ) -> QueryMemory | None:
        """From one row per step (``tools[i]`` its tool; ``vectors``: a matrix or a sequence
        of rows, of any float type, read on ``columns``): grouped, unit-length, projected on
        their ``dims`` principal directions when that is fewer than they have (0: never), or
        on ``basis`` when given (an earlier build's, kept as the rows change a little);
        ``None`` when no step has weight (a namespace without memory routes as before).

        Built ``_NORM_CHUNK`` rows at a time straight into the kept matrix: besides it, at
        most one chunk of whole float32 rows is alive (``bench/perf/memory_parts.py``).
        ``kept``: the rows are an earlier build's kept rows (unit, projected on ``basis``),
        only grouped anew: a rebuild reuses an unchanged step's row."""
        weights = np.asarray(weights, dtype=np.float32)
        distinct, order, offsets = grouping(tools, weights)
        if order.size == 0:
            return None
        if basis is None and dims > 0 and not kept:
            basis = principal_basis(unit_chunk(vectors, sample_rows(order), columns), dims)
        if kept:  # an earlier build's rows: grouped, not transformed again
            assert isinstance(vectors, np.ndarray) or not isinstance(vectors, RowSource)
            out = np.array([vectors[i] for i in order.tolist()], dtype=np.float32)
        else:
            out = unit_projected(vectors, order, columns, basis)
        names = tuple(str(n) for n in distinct)
        return cls(
            names,
            offsets,
            out,
            np.ascontiguousarray(weights[order], dtype=np.float32),
            {name: i for i, name in enumerate(names)},
            basis,
        )

    @property
    def dim(self) -> int:
        """The dimension of the step vectors it was built from (the encoder's)."""
        return int(self.vectors.shape[1] if self.basis is None else self.basis.shape[1])

    def __len__(self) -> int:
        return int(self.weights.size)

    def project(self, unit: np.ndarray) -> np.ndarray:
        """A step's unit vector in the space the rows are kept in."""
        return unit if self.basis is None else self.basis @ unit

    def aligned(self, names: Sequence[str]) -> Alignment:
        """Each of ``names``'s rows (an index's tools, by column), computed for the first
        route after the index or the memory is swapped, then reused while both hold."""
        cached = self._aligned[0]
        if cached is not None and cached.names is names:
            return cached
        made = Alignment.of(self, names)
        self._aligned[0] = made  # one assignment: a concurrent route sees one or the other
        return made

    @property
    def nbytes(self) -> int:
        basis = 0 if self.basis is None else self.basis.nbytes
        return int(self.vectors.nbytes + self.weights.nbytes + self.offsets.nbytes + basis)


@dataclass(frozen=True, slots=True)
class Alignment:
    """A memory's rows by the columns of one index's ``names``: tool ``names[c]``'s rows are
    ``starts[c]:starts[c] + lengths[c]`` (length 0: it has none); ``any``: some tool has."""

    names: Sequence[str]
    starts: np.ndarray
    lengths: np.ndarray
    any: bool

    @classmethod
    def of(cls, memory: QueryMemory, names: Sequence[str]) -> Alignment:
        ids = np.fromiter((memory.positions.get(n, -1) for n in names), np.int64, len(names))
        have = ids >= 0
        ids[~have] = 0
        starts = np.where(have, memory.offsets[ids], 0)
        lengths = np.where(have, memory.offsets[ids + 1] - starts, 0)
        return cls(names, starts, lengths, bool(have.any()))


def principal_basis(rows: np.ndarray, dims: int, sample: int = _SAMPLE) -> np.ndarray | None:
    """The ``dims`` directions keeping the most of the rows' energy (top eigenvectors of
    ``MᵀM``, uncentred: dot products are what is kept), as ``(dims, d)`` rows; ``None``
    when ``dims`` is 0 or not below the rows' dimension. As app/embedding/cosines.py fits
    the tools' int8 copy. ``MᵀM`` is summed in float64 ``_GRAM_CHUNK`` rows at a time (a
    whole float64 copy of 16,384 rows of 896 was 112 MiB of a 100,000-example build)."""
    if not 0 < dims < rows.shape[1]:
        return None
    part = rows[:: max(1, len(rows) // sample)][:sample]
    gram = np.zeros((rows.shape[1], rows.shape[1]), dtype=np.float64)
    for start in range(0, len(part), _GRAM_CHUNK):
        chunk = part[start : start + _GRAM_CHUNK].astype(np.float64)
        gram += chunk.T @ chunk
    _, vectors = np.linalg.eigh(gram)  # ascending eigenvalues
    return np.ascontiguousarray(vectors[:, ::-1][:, :dims].T, dtype=np.float32)


def agreement(cosines: np.ndarray, floor: float) -> np.ndarray:
    """0 at or below ``floor``, rising linearly to 1 at cosine 1 (a new array)."""
    scaled = np.subtract(cosines, np.float32(floor))
    np.divide(scaled, np.float32(1.0 - floor), out=scaled)
    np.maximum(scaled, 0.0, out=scaled)  # np.clip's value, without its overhead
    return np.minimum(scaled, 1.0, out=scaled)


def segment_rows(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The row numbers of the segments ``starts[i]:starts[i] + lengths[i]`` (each segment's
    rows in turn; every length > 0) and where each segment's rows start among them."""
    ends = np.cumsum(lengths)
    begins = ends - lengths
    rows = np.repeat(starts - begins, lengths)
    rows += np.arange(rows.size)
    return rows, begins


def step_query(memory: QueryMemory, query_vec: np.ndarray) -> np.ndarray | None:
    """The step's vector (its first row if several) at unit length, in the space the rows
    are kept in: projected, then divided by its norm (one scalar, not a vector, is
    divided); ``None`` when it is unusable (NaN, infinite)."""
    vectors = np.asarray(query_vec, dtype=np.float32)
    first = vectors[0] if vectors.ndim == 2 else vectors
    square = float(np.vdot(first, first))  # BLAS: an overflow is inf, not a warning
    if not math.isfinite(square):  # NaN, or values too large to square in float32
        unit = unit_rows(query_vec, 1, memory.dim)
        return None if unit is None else memory.project(unit[0])
    projected = memory.project(first)
    return projected / np.float32(math.sqrt(square)) if square > 0 else projected


def segment_votes(
    memory: QueryMemory, starts: np.ndarray, lengths: np.ndarray, query: np.ndarray, floor: float
) -> np.ndarray:
    """Each segment's best vote, ``max weight · agreement`` over its rows (segments as
    ``segment_rows`` takes them); ``query``: the step's ``step_query``. One product."""
    rows, begins = segment_rows(starts, lengths)
    cosines = np.take(memory.vectors, rows, axis=0) @ query
    scored = agreement(cosines, floor)
    scored *= np.take(memory.weights, rows)
    return np.maximum.reduceat(scored, begins)


def memory_votes(
    memory: QueryMemory, names: Sequence[str], unit: np.ndarray, floor: float
) -> np.ndarray:
    """Each named tool's best vote, ``max weight · agreement`` over its remembered steps
    (0 for a tool without memory); ``unit``: the step's unit vector."""
    aligned = Alignment.of(memory, names)
    votes = np.zeros(len(names), dtype=np.float32)
    have = np.flatnonzero(aligned.lengths)
    if have.size:
        starts, lengths = aligned.starts[have], aligned.lengths[have]
        votes[have] = segment_votes(memory, starts, lengths, memory.project(unit), floor)
    return votes
