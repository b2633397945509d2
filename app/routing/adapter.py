"""The learned stage: a query-side linear adapter trained from a namespace's reports.

A report says "this step needed that tool". The adapter ``W`` (d × d, started at the
identity) moves a step's unit vector ``q`` to ``q W``, trained so that the adapted step is
nearer its reported tool than every other tool of the namespace: a softmax (InfoNCE) loss
over all the namespace's tool vectors, each pair weighted (the prior's decay and trust),

    loss = Σ w_i · −log softmax_j(cos(q_i W, t_j) / τ)[y_i] / Σ w_i + λ · ‖W − I‖²

Two things keep a tool without reports in its place (issue 29's measurements, and
docs/ROUTING.md "Learning from reports"): every card is also a training pair — its own
vector as the step, itself as the tool (``anchors``) — and ``λ`` pulls ``W`` toward the
identity. At route time the adapter adds, to the pool's tools *that have reports* only,

    learned(t) = weight · (cos(q W, t) − cos(q, t))

so a tool nobody reported is never moved, and a step whose adapted vector does not move
toward a reported tool leaves it where it was. One (d × d) product per route plus a dot
product per reported tool of the pool.

Pure numpy: no model, no database. Training (``train``) is a few hundred Adam steps over
cached vectors; the service runs it off the request path (app/learning/).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.routing.calibration import Calibration

TEMPERATURE = 0.05  # the softmax's temperature over cosines
PULL = 1e-3  # λ: the pull of W toward the identity


@dataclass(frozen=True, eq=False)
class Adapter:
    """``matrix`` (d, d): a step's unit vector ``q`` becomes ``q @ matrix``; ``tools``: the
    tools it was trained with reports of (only those get a learned part)."""

    matrix: np.ndarray
    tools: frozenset[str] = frozenset()
    _digest: list[str] = field(default_factory=list, repr=False)

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[0])

    def adapt(self, unit: np.ndarray) -> np.ndarray:
        """The adapted unit vector(s) of unit step vector(s) ``unit`` ((d,) or (r, d))."""
        moved = np.asarray(unit, dtype=np.float32) @ self.matrix
        norms = np.linalg.norm(moved, axis=-1, keepdims=True)
        out: np.ndarray = moved / np.where(norms > 0, norms, np.float32(1.0))
        return out

    def learned_contribution(
        self,
        unit: np.ndarray,
        tool_rows: np.ndarray,
        reported: np.ndarray,
        weight: float,
    ) -> np.ndarray:
        """``weight · (cos(q W, t) − cos(q, t))`` for each of ``tool_rows`` (unit rows, (n, d))
        whose ``reported`` flag is set, 0 for the others. ``unit``: the step's unit vector."""
        part = np.zeros(len(tool_rows), dtype=np.float32)
        at = np.flatnonzero(reported)
        if at.size == 0 or weight == 0:
            return part
        rows = tool_rows[at]
        moved = self.adapt(unit)
        part[at] = np.float32(weight) * (rows @ moved - rows @ np.asarray(unit, np.float32))
        return part

    def digest(self) -> str:
        """A short, stable name of the weights (what the answer's model version shows)."""
        if not self._digest:
            raw = np.ascontiguousarray(self.matrix, dtype=np.float32).tobytes()
            self._digest.append(hashlib.sha256(raw).hexdigest()[:16])
        return self._digest[0]

    def to_bytes(self) -> bytes:
        """The weights as float32 bytes, row-major (what the database stores)."""
        return np.ascontiguousarray(self.matrix, dtype="<f4").tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes, dim: int, tools: Sequence[str]) -> Adapter:
        matrix = np.frombuffer(raw, dtype="<f4")
        if matrix.size != dim * dim:
            raise ValueError(f"an adapter of {dim} dims has {dim * dim} weights, not {matrix.size}")
        return cls(matrix.reshape(dim, dim).astype(np.float32), frozenset(tools))


@dataclass(frozen=True, slots=True)
class Pairs:
    """Training pairs: step unit vectors ``steps`` (n, d), each one's tool (a row number of
    the tool matrix) and weight."""

    steps: np.ndarray
    tools: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return int(self.tools.size)


def anchors(tool_rows: np.ndarray, weight: float = 1.0) -> Pairs:
    """One pair per tool: the card's own vector as the step, the tool itself as its tool."""
    n = len(tool_rows)
    return Pairs(
        np.asarray(tool_rows, dtype=np.float32),
        np.arange(n, dtype=np.int64),
        np.full(n, weight, dtype=np.float32),
    )


def joined(*pairs: Pairs) -> Pairs:
    return Pairs(
        np.concatenate([p.steps for p in pairs]).astype(np.float32, copy=False),
        np.concatenate([p.tools for p in pairs]),
        np.concatenate([p.weights for p in pairs]).astype(np.float32, copy=False),
    )


def loss_and_gradient(
    matrix: np.ndarray,
    steps: np.ndarray,
    tools: np.ndarray,
    weights: np.ndarray,
    tool_rows: np.ndarray,
    temperature: float = TEMPERATURE,
    pull: float = PULL,
    total_weight: float | None = None,
) -> tuple[float, np.ndarray]:
    """The weighted InfoNCE loss of a batch and its gradient in ``matrix`` (see the module's
    formula). ``total_weight``: the weight the batch's loss is divided by (default its own)."""
    moved = steps @ matrix  # (b, d)
    norms = np.linalg.norm(moved, axis=1, keepdims=True)
    norms = np.where(norms > 0, norms, np.float32(1.0))
    unit = moved / norms
    logits = (unit @ tool_rows.T) / np.float32(temperature)  # (b, m)
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    probs = exp / exp.sum(axis=1, keepdims=True)
    rows = np.arange(tools.size)
    total = float(weights.sum()) if total_weight is None else total_weight
    total = max(total, 1e-12)
    nll = -np.log(np.maximum(probs[rows, tools], 1e-30))
    delta = probs
    delta[rows, tools] -= 1.0
    delta *= (weights / np.float32(total * temperature))[:, None]
    d_unit = delta @ tool_rows  # (b, d)
    d_moved = (d_unit - unit * np.einsum("ij,ij->i", d_unit, unit)[:, None]) / norms
    off = matrix - np.eye(matrix.shape[0], dtype=matrix.dtype)
    gradient = steps.T @ d_moved + np.float32(2 * pull) * off
    loss = float((weights * nll).sum() / total) + pull * float(np.square(off).sum())
    return loss, gradient.astype(np.float32)


@dataclass(frozen=True, slots=True)
class Training:
    """How ``train`` runs: Adam with this learning rate over ``epochs`` passes of batches."""

    epochs: int = 30
    batch: int = 256
    learning_rate: float = 2e-3
    temperature: float = TEMPERATURE
    pull: float = PULL
    seed: int = 0
    # Beyond this many tools each batch's softmax reads a sample of them: the batch's own
    # tools, each step's ``hard`` nearest tools (by the plain cosine) and random others,
    # ``sample`` in all (sampled softmax; the full one costs steps × tools per pass).
    full_softmax: int = 1024
    sample: int = 512
    hard: int = 16
    # At most this many Adam steps, whatever the pairs (the epochs shrink to fit).
    max_steps: int = 600


DEFAULT_TRAINING = Training()


def nearest(steps: np.ndarray, tool_rows: np.ndarray, count: int, chunk: int = 1024) -> np.ndarray:
    """Each step's ``count`` nearest tools by cosine (row numbers), a chunk of steps at a time."""
    count = min(count, len(tool_rows))
    out = np.empty((len(steps), count), dtype=np.int64)
    for start in range(0, len(steps), chunk):
        cos = steps[start : start + chunk] @ tool_rows.T
        out[start : start + chunk] = np.argpartition(-cos, count - 1, axis=1)[:, :count]
    return out


def sample_of(
    labels: np.ndarray, near: np.ndarray, tools: int, size: int, rng: np.random.Generator
) -> np.ndarray:
    """The sorted tools a batch's softmax reads: its labels, their steps' nearest tools, and
    random others up to ``size``."""
    chosen = np.union1d(labels, near.ravel())
    short = size - chosen.size
    if short > 0:
        chosen = np.union1d(chosen, rng.choice(tools, min(short, tools), replace=False))
    return chosen


def train(
    pairs: Pairs,
    tool_rows: np.ndarray,
    reported: Sequence[str] = (),
    settings: Training = DEFAULT_TRAINING,
    start: np.ndarray | None = None,
) -> Adapter:
    """An adapter trained on ``pairs`` against every row of ``tool_rows`` (unit rows, the
    namespace's tools); ``reported``: the names of the tools with reports among the pairs."""
    tool_rows = np.ascontiguousarray(tool_rows, dtype=np.float32)
    dim = tool_rows.shape[1]
    matrix = (np.eye(dim, dtype=np.float32) if start is None else start).astype(np.float32)
    if len(pairs) == 0:
        return Adapter(matrix, frozenset(reported))
    rng = np.random.default_rng(settings.seed)
    first, second = np.zeros_like(matrix), np.zeros_like(matrix)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    step = 0
    total = float(pairs.weights.sum())
    sampled = len(tool_rows) > settings.full_softmax
    near = nearest(pairs.steps, tool_rows, settings.hard) if sampled else None
    batches = -(-len(pairs) // settings.batch)
    epochs = max(1, min(settings.epochs, settings.max_steps // batches))
    for _ in range(epochs):
        order = rng.permutation(len(pairs))
        for start_at in range(0, order.size, settings.batch):
            at = order[start_at : start_at + settings.batch]
            share = total * at.size / order.size  # each batch's loss on the whole's scale
            rows, labels = tool_rows, pairs.tools[at]
            if near is not None:
                chosen = sample_of(labels, near[at], len(tool_rows), settings.sample, rng)
                rows, labels = tool_rows[chosen], np.searchsorted(chosen, labels)
            _, gradient = loss_and_gradient(
                matrix,
                pairs.steps[at],
                labels,
                pairs.weights[at],
                rows,
                settings.temperature,
                settings.pull,
                share,
            )
            step += 1
            first *= np.float32(beta1)
            first += np.float32(1 - beta1) * gradient
            second *= np.float32(beta2)
            second += np.float32(1 - beta2) * gradient * gradient
            corrected = first / np.float32(1 - beta1**step)
            scale = np.sqrt(second / np.float32(1 - beta2**step)) + np.float32(eps)
            matrix -= np.float32(settings.learning_rate) * corrected / scale
    return Adapter(matrix.astype(np.float32), frozenset(reported))


# The learned part's weight, and how many of the best tools by score (before it) it reads:
# docs/ROUTING.md "Learning from reports" says how they were chosen.
LEARNED_WEIGHT = 3.0
LEARNED_POOL = 50


# An index's names, the confirmed tools, their mask by column, and name → column.
Aligned = tuple[Sequence[str], frozenset[str] | None, np.ndarray, dict[str, int]]


@dataclass(frozen=True, eq=False)
class Learned:
    """A namespace's serving adapter as one key's routes read it: what ``route`` reads for
    the ``learned`` part.

    Bounded influence (app/loop/trust.py, app/learning/scope.py): the part moves a tool in
    a route only if every key may be moved by it (``confirmed``: enough keys reported it) or
    the routing key (``key``) alone reported it (``own``: key → those tools). ``confirmed``
    None: every tool the adapter has reports of (each report trusted for every key, as in
    a replay); ``key`` None: a key that reported nothing."""

    adapter: Adapter
    weight: float = LEARNED_WEIGHT
    pool: int = LEARNED_POOL
    version: int = 0
    # True: the part is in the embedding part's units (weight 1: as if the adapted cosine
    # replaced the cosine in the fusion); False: in cosine units.
    relative: bool = False
    # The namespace's own calibration of the top candidate's confidence (calibration.py),
    # read by every candidate; None: the fitted model's confidence as it is.
    calibration: Calibration | None = None
    confirmed: frozenset[str] | None = None
    own: Mapping[str, frozenset[str]] = field(default_factory=dict)
    key: str | None = None
    # The last index's confirmed mask and name → column (by the identity of ``names`` and
    # ``confirmed``): one slot, swapped whole, shared by every key's view.
    _aligned: list[Aligned | None] = field(default_factory=lambda: [None], repr=False)

    def for_key(self, key: str | None) -> Learned:
        """This model as ``key``'s routes read it (a shallow copy: one per route)."""
        if key == self.key:
            return self
        view = object.__new__(Learned)  # dataclasses.replace re-runs __init__: 10x slower
        view.__dict__.update(self.__dict__, key=key)
        return view

    def moves(self) -> frozenset[str]:
        """The tools this view's routes may move."""
        confirmed = self.adapter.tools if self.confirmed is None else self.confirmed
        mine = frozenset() if self.key is None else self.own.get(self.key, frozenset())
        return confirmed | mine

    def movable(self, names: Sequence[str]) -> np.ndarray:
        """Which of an index's ``names`` (by column) this view's routes may move."""
        cached = self._aligned[0]
        if cached is None or cached[0] is not names or cached[1] is not self.confirmed:
            confirmed = self.adapter.tools if self.confirmed is None else self.confirmed
            mask = np.fromiter((n in confirmed for n in names), dtype=bool, count=len(names))
            cached = (names, self.confirmed, mask, {})
            self._aligned[0] = cached
        mine = () if self.key is None else self.own.get(self.key, ())
        if not mine:
            return cached[2]
        columns = cached[3]
        if not columns:  # once per index, and only when some key owns tools
            columns.update((n, i) for i, n in enumerate(names))
        out = cached[2].copy()
        out[[columns[t] for t in mine if t in columns]] = True
        return out
