"""Query memory: steps that used a tool successfully vote for it (kNN; Tool2Vec, arXiv
2409.02141, represents a tool by the requests that used it).

A namespace's memory is a matrix of remembered step vectors (unit rows, grouped by tool)
with one weight per step in [0, 1] (decayed, capped evidence: ``app/loop/memory.py``). A
route adds, to each of its best ``memory_pool`` tools by fused score, the vote of the
remembered step of that tool most like the step being routed:

    agreement(s) = clip((cos(q, s) − floor) / (1 − floor), 0, 1)
    memory(t)    = memory_weight · max over t's steps s of weight(s) · agreement(s)

A step unlike every remembered one (cosine under ``memory_floor``) gets nothing from
memory, so it is ranked exactly as without it; a tool without evidence is never lowered,
only passed by an evidenced tool that the step resembles. Taking the best step, not a sum,
means a thousand reports of one text count as one, and no tool's part can exceed
``memory_weight``. One product over the pool's remembered rows: no loop over steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.routing.types import RouterConfig


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

    @classmethod
    def build(
        cls, tools: Sequence[str], vectors: np.ndarray, weights: np.ndarray, dims: int = 0
    ) -> QueryMemory | None:
        """From one row per step (``tools[i]`` its tool): grouped, unit-length, projected on
        their ``dims`` principal directions when that is fewer than they have (0: never);
        ``None`` when no step has weight (a namespace without memory routes as before)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        weights = np.asarray(weights, dtype=np.float32)
        keep = np.flatnonzero(weights > 0)
        if keep.size == 0:
            return None
        distinct, inverse = np.unique(np.asarray(tools)[keep], return_inverse=True)
        order = keep[np.argsort(inverse, kind="stable")]
        offsets = np.concatenate(([0], np.cumsum(np.bincount(inverse)))).astype(np.int64)
        rows = vectors[order]
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        rows = rows / np.where(norms > 0, norms, 1.0)
        basis = principal_basis(rows, dims)
        if basis is not None:
            rows = rows @ basis.T
        names = tuple(str(n) for n in distinct)
        return cls(
            names,
            offsets,
            np.ascontiguousarray(rows, dtype=np.float32),
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

    @property
    def nbytes(self) -> int:
        basis = 0 if self.basis is None else self.basis.nbytes
        return int(self.vectors.nbytes + self.weights.nbytes + self.offsets.nbytes + basis)


def principal_basis(rows: np.ndarray, dims: int, sample: int = 16_384) -> np.ndarray | None:
    """The ``dims`` directions keeping the most of the rows' energy (top eigenvectors of
    ``MᵀM``, uncentred: dot products are what is kept), as ``(dims, d)`` rows; ``None``
    when ``dims`` is 0 or not below the rows' dimension. As app/embedding/cosines.py fits
    the tools' int8 copy."""
    if not 0 < dims < rows.shape[1]:
        return None
    part = rows[:: max(1, len(rows) // sample)][:sample].astype(np.float64)
    _, vectors = np.linalg.eigh(part.T @ part)  # ascending eigenvalues
    return np.ascontiguousarray(vectors[:, ::-1][:, :dims].T, dtype=np.float32)


def agreement(cosines: np.ndarray, floor: float) -> np.ndarray:
    """0 at or below ``floor``, rising linearly to 1 at cosine 1."""
    return np.clip((cosines - np.float32(floor)) / np.float32(1.0 - floor), 0.0, 1.0)


def gather_rows(offsets: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The row numbers of tools ``ids`` (each tool's rows in turn) and where each tool's
    rows start among them."""
    starts, ends = offsets[ids], offsets[ids + 1]
    lengths = ends - starts
    begins = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    rows = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - begins, lengths)
    return rows, begins


def memory_votes(
    memory: QueryMemory, names: Sequence[str], unit: np.ndarray, floor: float
) -> np.ndarray:
    """Each named tool's best vote, ``max weight · agreement`` over its remembered steps
    (0 for a tool without memory); ``unit``: the step's unit vector."""
    votes = np.zeros(len(names), dtype=np.float32)
    ids = np.fromiter((memory.positions.get(n, -1) for n in names), np.int64, len(names))
    have = np.flatnonzero(ids >= 0)
    if have.size == 0:
        return votes
    rows, begins = gather_rows(memory.offsets, ids[have])
    query = unit if memory.basis is None else memory.basis @ unit
    cosines = memory.vectors[rows] @ query
    scored = memory.weights[rows] * agreement(cosines, floor)
    votes[have] = np.maximum.reduceat(scored, begins)
    return votes


def memory_part(
    memory: QueryMemory,
    names: Sequence[str],
    cols: np.ndarray,
    total: np.ndarray,
    unit: np.ndarray,
    config: RouterConfig,
) -> np.ndarray:
    """The memory part of the tools ``cols`` (``names``: every tool's, by column; ``total``:
    their score before memory): ``memory_weight`` times its vote for the best
    ``memory_pool`` of them, 0 for the others."""
    part = np.zeros(total.size, dtype=np.float32)
    pool = min(config.memory_pool, total.size)
    if pool <= 0 or config.memory_weight == 0.0:
        return part
    top = np.argpartition(-total, pool - 1)[:pool] if pool < total.size else np.arange(pool)
    picked = [names[c] for c in cols[top].tolist()]
    votes = memory_votes(memory, picked, unit, config.memory_floor)
    part[top] = np.float32(config.memory_weight) * votes
    return part
