"""The learned layer: a namespace's reranker of its cold top candidates, trained from its
reports (issue 41; docs/ROUTING.md "Learning from reports").

A route first ranks cold (keyword, embedding, the cards' evidence: ``pipeline.py``); a
namespace whose guard promoted a model (app/learning/guard.py) then reads each of the cold
top ``depth`` candidates as a row of ``FEATURES``:

- the cold ones: its score, its score less the top's, its rank, its confidence, each
  stage's part, its cosine, BM25 and coverage;
- the report ones, from the reported steps the model was trained with (its ``Bank``): the
  best and mean cosine of the step to the tool's reported steps, how many there are and
  their weight (the usage prior's evidence), the step's best cosine to any candidate's
  reports, the tool's margin over the best other candidate, a vote of the ``NEAREST``
  nearest reports (query memory's evidence), and the share of the step's words the tool's
  reported steps hold, with its margin.

A gradient-boosted tree ensemble (``Forest``, fitted in app/learning/training.py by
scikit-learn's HistGradientBoosting, binary, or by LightGBM's lambdarank, read here by plain
numpy) gives each candidate the probability that it is a step's tool: a binary tree sum's
sigmoid, or a ranker's scores' softmax over the step's candidates (``chances``). The cold
first candidate keeps its place unless the model's best beats it by a gate — ``delta``, or
``delta_cold`` when the cold first is unknown: no reports of it the key may read, and no
reported step like this one (cosine ≥ ``PASSED_OVER``, of a tool the key may read) that
agents chose another tool for while it was the cold first (a right tool nobody reported
looks like that) — chosen out of fold on the reports, never on the
held-out ones; and only a tool the routing key may move (bounded influence,
``Learned.moves``) can take it. Each candidate's confidence is the model's probability,
calibrated on the held-out reports, never rising down the list.

A tool whose reports a key may not see (``moves``) reads as a tool without reports. Pure
numpy: no model, no database.
"""

from __future__ import annotations

import functools
import hashlib
import io
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.routing.calibration import Calibration
from app.routing.candidates import Ranked
from app.routing.confidence import falling
from app.routing.text import stems
from app.routing.types import Candidate

COLD_FEATURES = (
    "score",
    "score_gap",  # score less the top candidate's
    "rank",
    "confidence",
    "keyword",
    "embedding",
    "evidence",  # the cold votes' sum (values, action, resource, examples)
    "penalty",
    "cosine",
    "bm25",
    "coverage",
)
REPORT_FEATURES = (
    "report_max",  # best cosine of the step to the tool's reported steps
    "report_mean",
    "report_count",  # log(1 + reported steps of the tool)
    "report_weight",  # log(1 + their summed weight): the usage prior's evidence
    "any_max",  # the step's best cosine to any candidate's reports
    "report_margin",  # report_max less the best other candidate's
    "nearest_vote",  # the tool's share of the NEAREST nearest reports (query memory's)
    "words",  # share of the step's words the tool's reported steps hold
    "words_margin",
    # the share of the NEAREST nearest reported texts that reported the tool: a text whose
    # step needed two tools votes for both (nearest_vote splits it between them)
    "text_vote",
)
FEATURES = COLD_FEATURES + REPORT_FEATURES
# A model stored without its features' names (before they were kept) was trained on these.
STORED_BEFORE = FEATURES[: FEATURES.index("text_vote")]
NEAREST = 5
DEPTH = 20  # cold candidates a model reorders
LIFT = 1e-4  # how far above the cold first the model's first is shown
COLD_STAGES = ("keyword", "embedding", "prior", "penalty")
NO_ROWS = np.zeros(0, dtype=np.int64)  # no bank rows left out


def in_order(
    leaf: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    feature: np.ndarray,
    threshold: np.ndarray,
) -> tuple[list[int], list[tuple[int, float, int]]]:
    """One tree's leaves left to right, and each split as (feature, threshold, the mask of
    the leaves on its left side: bit ``i`` for the ``i``-th leaf)."""
    leaves: list[int] = []
    splits: list[tuple[int, float, int]] = []

    def under(node: int) -> int:
        if leaf[node]:
            leaves.append(node)
            return 1 << (len(leaves) - 1)
        low = under(int(left[node]))
        splits.append((int(feature[node]), float(threshold[node]), low))
        return low | under(int(right[node]))

    under(0)
    return leaves, splits


@dataclass(frozen=True, eq=False)
class Forest:
    """Regression trees, flattened to (trees, nodes) arrays: at a node, row ``x`` goes left
    when ``x[feature] <= threshold``; a leaf's ``value`` is added; the sum, plus
    ``baseline``, is a log-odds (``link`` "logistic": binary trees, a probability a row) or a
    ranker's score (``link`` "softmax": lambdarank trees, whose scores mean something only
    against the other candidates of the same step; a probability over one step's rows)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    leaf: np.ndarray
    baseline: float
    depth: int
    link: str = "logistic"

    def __post_init__(self) -> None:
        if self.link not in LINKS:
            raise ValueError(f"unknown link {self.link!r}; one of {', '.join(LINKS)}")

    @functools.cached_property
    def _masks(self) -> tuple[np.ndarray, ...] | None:
        """The trees as QuickScorer reads them (Lucchese et al., SIGIR 2015), or None when a
        tree has more than 64 leaves: each tree's leaves numbered left to right, and for each
        split the leaves it rules out when a row goes right (those of its left side; as
        ``~`` of a 64-bit mask). A row's leaf in a tree is the first of that tree's leaves
        no split of it rules out. Each tree's columns start with one that rules out nothing
        (threshold +inf), so every tree has one."""
        full = (1 << 64) - 1
        feature: list[int] = []
        threshold: list[float] = []
        keep: list[int] = []
        starts: list[int] = []
        offsets: list[int] = []
        values: list[float] = []
        for t in range(self.feature.shape[0]):
            leaves, splits = in_order(
                self.leaf[t], self.left[t], self.right[t], self.feature[t], self.threshold[t]
            )
            if len(leaves) > 64:
                return None
            starts.append(len(feature))
            offsets.append(len(values))
            feature += [0, *(f for f, _, _ in splits)]
            threshold += [np.inf, *(h for _, h, _ in splits)]
            keep += [full, *(full ^ low for _, _, low in splits)]
            values += [float(self.value[t, leaf]) for leaf in leaves]
        return (
            np.array(feature, dtype=np.int64),
            np.array(threshold, dtype=np.float64),
            np.array(keep, dtype=np.uint64),
            np.array(starts, dtype=np.int64),
            np.array(offsets, dtype=np.int64),
            np.array(values, dtype=np.float64),
        )

    def log_odds(self, rows: np.ndarray) -> np.ndarray:
        """Each row's summed log-odds, or a ranker's score (``link``) ((n,) float64): the
        leaves' values summed over the
        trees in their order. All splits of all trees are read at once (``_masks``): a few
        array operations, not one per level of the deepest tree."""
        n = len(rows)
        trees = self.feature.shape[0]
        if n == 0 or trees == 0:
            return np.full(n, self.baseline)
        masks = self._masks
        if masks is None:
            return self.baseline + self._walked(rows).sum(axis=0)
        feature, threshold, keep, starts, offsets, values = masks
        x = np.asarray(rows, dtype=np.float64)[:, feature]
        kept = np.where(x <= threshold, np.uint64((1 << 64) - 1), keep)  # NaN goes right
        kept = np.bitwise_and.reduceat(kept, starts, axis=1)  # (n, trees): leaves left
        first = kept & (~kept + np.uint64(1))  # the lowest bit set
        place = np.frexp(first.astype(np.float64))[1] - 1  # its number
        leaf = values[offsets + place]
        return self.baseline + np.ascontiguousarray(leaf.T).sum(axis=0)

    def _walked(self, rows: np.ndarray) -> np.ndarray:
        """Each tree's leaf value for each row, (trees, n), walking all trees a level at a
        time (trees of more than 64 leaves)."""
        trees, n = self.feature.shape[0], len(rows)
        node = np.zeros((trees, n), dtype=np.int64)
        tree = np.arange(trees)[:, None]
        cols = np.arange(n)[None, :]
        for _ in range(self.depth):
            at_leaf = self.leaf[tree, node]
            if at_leaf.all():
                break
            goes_left = rows[cols, self.feature[tree, node]] <= self.threshold[tree, node]
            step = np.where(goes_left, self.left[tree, node], self.right[tree, node])
            node = np.where(at_leaf, node, step)
        walked: np.ndarray = self.value[tree, node]
        return walked

    def probability(self, rows: np.ndarray) -> np.ndarray:
        """Each row's probability of being a step's tool; ``rows``: one step's candidates
        (a ranker's are read against each other: ``chances``)."""
        return chances(self.log_odds(rows), self.link, np.array([0, len(rows)]))

    def probabilities(self, rows: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """``probability`` of many steps' rows at once (step ``s`` is rows ``starts[s]`` to
        ``starts[s + 1]``)."""
        return chances(self.log_odds(rows), self.link, starts)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "feature": self.feature,
            "threshold": self.threshold,
            "left": self.left,
            "right": self.right,
            "value": self.value,
            "leaf": self.leaf,
            "baseline": np.array([self.baseline]),
            "depth": np.array([self.depth]),
            "link": np.array([self.link], dtype=str),
        }

    @classmethod
    def of_arrays(cls, arrays: Mapping[str, np.ndarray]) -> Forest:
        return cls(
            arrays["feature"].astype(np.int64),
            arrays["threshold"].astype(np.float64),
            arrays["left"].astype(np.int64),
            arrays["right"].astype(np.int64),
            arrays["value"].astype(np.float64),
            arrays["leaf"].astype(bool),
            float(arrays["baseline"][0]),
            int(arrays["depth"][0]),
            str(arrays["link"][0]) if "link" in arrays else "logistic",  # stored before rankers
        )


LINKS = ("logistic", "softmax")


def chances(score: np.ndarray, link: str, starts: np.ndarray) -> np.ndarray:
    """Scores as probabilities: "logistic", each row's sigmoid; "softmax", over each step's
    rows (``starts``: where each starts, one past the last), the share ``exp(score)`` of the
    step's sum — a ranker's score is only defined up to a constant a step (lambdarank's
    gradients are differences of a step's scores); a softmax splits a step of two right tools
    between them, which is why the binary trees serve. Both rise with
    the score, so the order of a step's candidates is the trees'."""
    if link == "logistic":
        out: np.ndarray = 1.0 / (1.0 + np.exp(-score))
        return out
    out = np.empty_like(score, dtype=np.float64)
    for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
        if b > a:
            e = np.exp(score[a:b] - score[a:b].max())
            out[a:b] = e / e.sum()
    return out


@dataclass(frozen=True, eq=False)
class Bank:
    """The reported steps a model reads its report features from: unit ``vectors`` (n, d),
    each row's ``tools``, ``weights`` (bounded influence's shared weight) and ``texts``."""

    vectors: np.ndarray
    tools: tuple[str, ...]
    weights: np.ndarray
    texts: tuple[str, ...]
    rows_of: Mapping[str, np.ndarray] = field(default_factory=dict)
    words_of: Mapping[str, Counter[str]] = field(default_factory=dict)
    stems_of: tuple[frozenset[str], ...] = ()
    text_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @classmethod
    def build(
        cls,
        vectors: np.ndarray,
        tools: Sequence[str],
        weights: Sequence[float],
        texts: Sequence[str],
    ) -> Bank:
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(tools), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms > 0, norms, np.float32(1.0))
        rows: dict[str, list[int]] = {}
        words: dict[str, Counter[str]] = {}
        per_row = tuple(stems(t) for t in texts)
        ids: dict[str, int] = {}
        text_ids = np.fromiter((ids.setdefault(t, len(ids)) for t in texts), np.int64, len(texts))
        for i, tool in enumerate(tools):
            rows.setdefault(tool, []).append(i)
            words.setdefault(tool, Counter()).update(per_row[i])
        return cls(
            np.ascontiguousarray(vectors),
            tuple(tools),
            np.asarray(weights, dtype=np.float32),
            tuple(texts),
            {t: np.asarray(r, dtype=np.int64) for t, r in rows.items()},
            words,
            per_row,
            text_ids,
        )

    def __len__(self) -> int:
        return len(self.tools)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0

    def without(self, texts: frozenset[str]) -> Bank:
        """The bank less the steps of ``texts`` (the exam's held-out steps)."""
        keep = [i for i, t in enumerate(self.texts) if t not in texts]
        if len(keep) == len(self.texts):
            return self
        return Bank.build(
            self.vectors[keep],
            [self.tools[i] for i in keep],
            self.weights[keep].tolist(),
            [self.texts[i] for i in keep],
        )


def unit(vector: np.ndarray | None) -> np.ndarray | None:
    """A step's first row (the whole step), unit length; None without one."""
    if vector is None:
        return None
    row = np.asarray(vector, dtype=np.float32).reshape(-1, np.asarray(vector).shape[-1])[0]
    norm = float(np.linalg.norm(row))
    return row / norm if norm > 0 else row


def cold_rows(answer: Ranked | Sequence[Candidate]) -> np.ndarray:
    """The ``COLD_FEATURES`` of each candidate of a cold answer (its confidences as shown:
    never rising down the list), (n, len(COLD_FEATURES)). A route's (``Ranked``) are read
    as columns: no Candidate for the candidates a model reads but does not show."""
    if isinstance(answer, Ranked):
        scores = np.asarray(answer.scores, dtype=np.float64)
        evidence = np.zeros(scores.size)  # the votes summed in their order, as a row's
        for name, values in answer.stages.items():
            if name not in COLD_STAGES and name != "learned":
                evidence += values
        seen = answer.evidence
        return np.array(
            [
                scores,
                scores - scores[0],
                np.arange(scores.size),
                falling(answer.confidences),
                answer.stages["keyword"],
                answer.stages["embedding"],
                evidence,
                answer.stages["penalty"],
                [e.cosine for e in seen],
                [e.bm25 for e in seen],
                [e.coverage for e in seen],
            ],
            dtype=np.float64,
        ).T
    top = answer[0].score
    return np.array(  # one array from rows: a row at a time costs 20 conversions a route
        [
            (
                c.score,
                c.score - top,
                j,
                c.confidence,
                c.stages.get("keyword", 0.0),
                c.stages.get("embedding", 0.0),
                sum(v for s, v in c.stages.items() if s not in COLD_STAGES and s != "learned"),
                c.stages.get("penalty", 0.0),
                c.evidence.cosine,
                c.evidence.bm25,
                c.evidence.coverage,
            )
            for j, c in enumerate(answer)
        ],
        dtype=np.float64,
    )


def features(
    answer: Ranked | Sequence[Candidate],
    step: np.ndarray | None,
    words: frozenset[str],
    bank: Bank,
    visible: frozenset[str] | None,
    left_out: np.ndarray = NO_ROWS,
) -> np.ndarray:
    """One row of ``FEATURES`` per candidate of a cold ``answer``. ``step``: the step's unit
    vector; ``words``: its stems; ``visible``: the tools whose reports count (None: all);
    ``left_out``: bank rows left out (in training, the step's own reports: every tool's
    report of its text)."""
    n = len(answer)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    base = len(COLD_FEATURES)
    out[:, :base] = cold_rows(answer)
    names = answer.names if isinstance(answer, Ranked) else [c.name for c in answer]
    rows: list[np.ndarray] = []
    owner: list[int] = []
    for j, name in enumerate(names):
        found = bank.rows_of.get(name)
        if found is None or (visible is not None and name not in visible):
            continue
        if left_out.size:
            found = found[~np.isin(found, left_out)]
        if found.size:
            rows.append(found)
            owner.extend([j] * found.size)
    if rows and step is not None and bank.dim == step.size:
        at = np.concatenate(rows)
        who = np.asarray(owner)
        sims = bank.vectors[at] @ step
        weights = bank.weights[at]
        best = np.full(n, -1.0)
        np.maximum.at(best, who, sims)
        total = np.bincount(who, weights=sims, minlength=n)
        count = np.bincount(who, minlength=n)
        weight = np.bincount(who, weights=weights, minlength=n)
        has = count > 0
        out[:, base] = np.where(has, best, 0.0)
        out[:, base + 1] = np.where(has, total / np.maximum(count, 1), 0.0)
        out[:, base + 2] = np.log1p(count)
        out[:, base + 3] = np.log1p(weight)
        out[:, base + 4] = float(sims.max())
        out[:, base + 5] = margins(np.where(has, best, 0.0))
        order = np.argsort(-sims, kind="stable")
        near = order[:NEAREST]
        vote = np.bincount(who[near], weights=np.maximum(sims[near], 0.0), minlength=n)
        out[:, base + 6] = vote / max(float(vote.sum()), 1e-9)
        out[:, base + 9] = text_votes(bank.text_ids[at], who, sims, order, n)
    if words:
        share = np.zeros(n)
        mine: dict[str, Counter[str]] = {}  # tool → the stems of its rows left out
        for r in left_out.tolist():
            mine.setdefault(bank.tools[r], Counter()).update(bank.stems_of[r])
        for j, name in enumerate(names):
            bag = bank.words_of.get(name)
            if bag is None or (visible is not None and name not in visible):
                continue
            out_of = mine.get(name, Counter())
            held = sum(1 for w in words if bag.get(w, 0) - out_of.get(w, 0) > 0)
            share[j] = held / len(words)
        out[:, base + 7] = share
        out[:, base + 8] = margins(share)
    return out


def text_votes(
    text: np.ndarray, who: np.ndarray, sims: np.ndarray, order: np.ndarray, n: int
) -> np.ndarray:
    """Each of ``n`` candidates' share of the ``NEAREST`` reported texts most like the step
    (``text``, ``who``, ``sims``: each bank row read, its text, its candidate and cosine;
    ``order``: the rows by cosine, best first), each text's vote its cosine (at least 0),
    given whole to every candidate it reported."""
    chosen: list[int] = []
    votes: list[float] = []
    for head in (order[: 4 * NEAREST], order):  # the whole order only if a few texts fill it
        chosen.clear()
        votes.clear()
        for t, sim in zip(text[head].tolist(), sims[head].tolist(), strict=True):
            if t not in chosen:
                chosen.append(t)
                votes.append(max(sim, 0.0))
                if len(chosen) == NEAREST:
                    break
        if len(chosen) == NEAREST or head.size == order.size:
            break
    total = sum(votes)
    if total <= 0:
        return np.zeros(n)
    weights = (text[:, None] == np.array(chosen)[None, :]) @ np.array(votes)
    return np.bincount(who, weights=weights, minlength=n) / total


PASSED_OVER = 0.7  # how like the step a reported step that passed a tool over must be


def passed_over(
    bank: Bank,
    rows: np.ndarray | None,
    step: np.ndarray | None,
    visible: frozenset[str] | None,
    left_out: np.ndarray = NO_ROWS,
) -> bool:
    """Whether a reported step like ``step`` (cosine ≥ ``PASSED_OVER``), of a tool whose
    reports count (``visible``; None: all), passed over a tool (``rows``: the bank rows of
    the steps that did) — agents chose another tool where this one was the cold first."""
    if rows is None or step is None or bank.dim != step.size:
        return False
    at = rows[~np.isin(rows, left_out)] if left_out.size else rows
    if visible is not None:
        at = at[[bank.tools[r] in visible for r in at.tolist()]]
    return bool(at.size) and float((bank.vectors[at] @ step).max()) >= PASSED_OVER


def margins(values: np.ndarray) -> np.ndarray:
    """Each value less the best of the others."""
    if values.size < 2:
        return values.copy()
    order = np.argsort(-values, kind="stable")
    first, second = values[order[0]], values[order[1]]
    return values - np.where(np.arange(values.size) == order[0], second, first)


@dataclass(frozen=True, eq=False)
class Reranker:
    """A trained reranker: its ``forest``, the gate ``delta`` and its ``bank``."""

    forest: Forest
    bank: Bank
    delta: float
    depth: int = DEPTH
    delta_cold: float = 1.0  # the gate when the cold first has no reports the key may read
    # tool → the bank rows of the reported steps it was the cold first of, whose agents chose
    # another tool (it was passed over)
    passed: Mapping[str, np.ndarray] = field(default_factory=dict)
    _digest: list[str] = field(default_factory=list, repr=False)

    @functools.cached_property
    def tools(self) -> frozenset[str]:
        """The tools it has reports of (kept: every route of a key reads them)."""
        return frozenset(self.bank.tools)

    @property
    def dim(self) -> int:
        return self.bank.dim

    def to_bytes(self) -> bytes:
        """The forest, the gate and the bank's steps (texts, tools, weights; not their
        vectors, which the service's embedding store keeps) as .npz bytes."""
        buffer = io.BytesIO()
        arrays = self.forest.arrays() | {
            "delta": np.array([self.delta, self.delta_cold]),
            "rerank_depth": np.array([self.depth]),
            "weights": self.bank.weights,
            "texts": np.array(self.bank.texts, dtype=str),
            "tools": np.array(self.bank.tools, dtype=str),
            "passed": np.array([t for t, at in self.passed.items() for _ in at], dtype=str),
            "passed_row": np.array([r for at in self.passed.values() for r in at], np.int64),
            "features": np.array(FEATURES, dtype=str),
        }
        np.savez(buffer, **arrays)  # type: ignore[arg-type]
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, raw: bytes, vectors_of: Callable[[list[str]], np.ndarray]) -> Reranker:
        """The stored reranker, its bank's vectors from ``vectors_of`` (texts → rows);
        ValueError for bytes that are not a reranker's (an adapter's from before), or a
        reranker trained on features other than a prefix of ``FEATURES`` (its columns would
        be read wrongly; the service then serves the namespace cold and logs it)."""
        try:
            arrays = dict(np.load(io.BytesIO(raw), allow_pickle=False))
        except (OSError, ValueError, EOFError) as exc:
            raise ValueError("not a reranker's weights") from exc
        if "delta" not in arrays:
            raise ValueError("not a reranker's weights")
        texts = [str(t) for t in arrays["texts"].tolist()]
        tools = [str(t) for t in arrays["tools"].tolist()]
        weights = arrays["weights"]
        if not len(texts) == len(tools) == len(weights):
            raise ValueError("a reranker's bank does not match its weights")
        vectors = vectors_of(texts) if texts else np.zeros((0, 1), np.float32)
        bank = Bank.build(vectors, tools, weights.tolist(), texts)
        forest = Forest.of_arrays(arrays)
        named = (
            tuple(str(f) for f in arrays["features"].tolist())
            if "features" in arrays
            else STORED_BEFORE
        )
        if FEATURES[: len(named)] != named or (
            forest.feature.size and int(forest.feature.max()) >= len(named)
        ):
            raise ValueError("a reranker trained on other features")
        delta = arrays["delta"]
        depth = int(arrays["rerank_depth"][0])
        passed: dict[str, list[int]] = {}
        for tool, row in zip(arrays["passed"].tolist(), arrays["passed_row"].tolist(), strict=True):
            passed.setdefault(str(tool), []).append(int(row))
        known = {t: np.asarray(at, dtype=np.int64) for t, at in passed.items()}
        return cls(forest, bank, float(delta[0]), depth, float(delta[-1]), known)

    def digest(self) -> str:
        if not self._digest:
            self._digest.append(hashlib.sha256(self.to_bytes()).hexdigest()[:16])
        return self._digest[0]


@dataclass(frozen=True, eq=False)
class Learned:
    """A namespace's serving reranker as one key's routes read it.

    Bounded influence (app/loop/trust.py, app/learning/scope.py): a tool's reports count,
    and the tool may be put first, in a route only if every key may be moved by them
    (``confirmed``: enough keys reported it) or the routing key (``key``) alone reported
    it (``own``: key → those tools). ``confirmed`` None: every tool it has reports of;
    ``key`` None: a key that reported nothing."""

    ranker: Reranker
    version: int = 0
    # The namespace's calibration of the model's probability (``calibration.py``); None:
    # the probability as it is.
    calibration: Calibration | None = None
    confirmed: frozenset[str] | None = None
    own: Mapping[str, frozenset[str]] = field(default_factory=dict)
    key: str | None = None

    def for_key(self, key: str | None) -> Learned:
        """This model as ``key``'s routes read it (a shallow copy: one per route)."""
        if key == self.key:
            return self
        view = object.__new__(Learned)  # dataclasses.replace re-runs __init__: 10x slower
        view.__dict__.update(self.__dict__, key=key)
        return view

    def moves(self) -> frozenset[str]:
        """The tools this view's routes may move (and whose reports they read)."""
        confirmed = self.ranker.tools if self.confirmed is None else self.confirmed
        mine = None if self.key is None else self.own.get(self.key)
        return confirmed | mine if mine else confirmed  # no copy of a large set per route

    def rerank(
        self,
        answer: Ranked | Sequence[Candidate],
        vector: np.ndarray | None,
        text: str,
        k: int | None = None,
    ) -> list[Candidate]:
        """The first ``k`` (None: all) of a cold ``answer`` (best first) as this model serves
        it: its first replaced by the model's best when that beats it by ``delta`` and may be
        moved; every confidence the model's, calibrated (not yet made non-increasing). Where
        its gate is 1 (a cold first without reports the key may read: ``delta_cold``) it can
        move nothing, and the answer is the cold one, confidences included: the model's
        probability of a tool whose reports it cannot read is not what it learned to estimate
        (on MetaTool, one-tool queries whose top it gave ~0.1 were right half the time)."""
        if not len(answer):
            return []
        ranker = self.ranker
        moves = self.moves()
        step = unit(vector)
        rows = features(answer, step, stems(text), ranker.bank, moves)
        names = answer.names if isinstance(answer, Ranked) else [c.name for c in answer]
        known = rows[0, FEATURES.index("report_count")] > 0 or passed_over(
            ranker.bank, ranker.passed.get(names[0]), step, moves
        )
        gate = ranker.delta if known else ranker.delta_cold
        if gate >= 1.0:  # it can lift nothing over this first: the cold answer, as it is
            return cold_answer(answer, k)
        probability = ranker.forest.probability(rows)
        best, chance = int(np.argmax(probability)), probability.tolist()
        lifted = best != 0 and names[best] in moves and chance[best] - chance[0] > gate
        order = list(range(len(answer)))
        if lifted:
            order.insert(0, order.pop(best))
        calibrate = self.calibration
        out = []
        scores = answer.scores if isinstance(answer, Ranked) else [c.score for c in answer]
        for j in order[:k]:  # only those shown: a Candidate each
            p = chance[j]
            lift = scores[0] - scores[j] + LIFT if lifted and j == best else 0.0
            out.append(shown(answer, j, lift, calibrate(p) if calibrate is not None else p))
        return out


def cold_answer(answer: Ranked | Sequence[Candidate], k: int | None) -> list[Candidate]:
    """The first ``k`` (None: all) of a cold answer as it is."""
    if isinstance(answer, Ranked):
        return [answer.candidate(j) for j in range(len(answer))[:k]]
    return list(answer[:k])


def shown(
    answer: Ranked | Sequence[Candidate], j: int, lift: float, confidence: float
) -> Candidate:
    """The ``j``-th candidate of a cold answer raised by ``lift`` (its stage ``learned``),
    with the model's ``confidence``."""
    if isinstance(answer, Ranked):
        return answer.candidate(j, lift, confidence)
    c = answer[j]
    return Candidate(  # not dataclasses.replace: it re-runs __init__, 20 times a route
        c.name,
        c.score + lift,
        {**c.stages, "learned": lift},
        c.missing_required,
        confidence,
        c.evidence,
        c.invalid_context,
        c.part,
    )
