"""Training a namespace's reranker (app/routing/reranker.py) from its remembered steps.

The remembered steps of one text are one group (``text_groups``: an agent that called two
tools for a step reported both, and each is a remembered step of its own). Each text is
routed cold once (the service's own pipeline, no model; a batch of texts' cosines a block
of tools at a time: ``cold_answers``) for its top ``DEPTH`` candidates; each candidate is a
row of the reranker's features, label 1 for every tool reported for the text
(``reported_for``), not only one: a text's other right tool is no negative.
A text's report features never see its own reports (leave one out: every bank row of the
text is left out, each tool's), so training reads what a new step would: a sibling's report
of the very same text would make both its tools look certain. A text none of whose tools
is among its cold candidates teaches nothing and is skipped.

A share ``HIDDEN_SHARE`` of the steps may read their tool as never reported (all its
reports hidden), for the gates to be chosen on steps of tools without reports too.

The trees are scikit-learn's HistGradientBoostingClassifier (``DEFAULT_TREES``: binary,
each row weighted by its text's shared weight: bounded influence), fitted on the rows binned
once (``Binned``) and read back into a plain ``Forest`` that splits on the features' values;
or, ``Trees(objective="lambdarank", leaves=31)``, LightGBM's lambdarank (each text's rows one
group, weighted the same way; lightgbm is a dev dependency, for the bench), read back from
the booster's dump into a ``Forest`` whose scores read as a softmax over a text's candidates.
The gate ``delta`` is chosen out of fold on the same steps (``FOLDS`` folds in time order): the one
that keeps the most of them first, the largest among equals; never on the held-out steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from app.loop.memory import RememberedStep
from app.routing.index import RouterIndex
from app.routing.pipeline import Router
from app.routing.reranker import (
    DEPTH,
    FEATURES,
    Bank,
    Forest,
    Reranker,
    features,
    passed_over,
    unit,
)
from app.routing.signals import Cosines, gemv_rows, unit_rows
from app.routing.text import stems
from app.routing.types import Candidate, RouteOptions, RouterConfig
from app.routing.view import NamespaceView

if TYPE_CHECKING:
    from sklearn.ensemble import HistGradientBoostingClassifier

FOLDS = 3
# At most this many steps are routed into training rows (a seeded sample of the bank; the
# bank keeps every step for the features): each costs a cold route.
MAX_TRAINING_STEPS = 4000
# This share of the training steps (seeded) may read their tool as never reported: every
# report of it hidden, not only their own. 0: since the model never lifts over a cold first
# without reports (COLD_DELTAS), 0.3 only cost hit@1 where reports are (docs/ROUTING.md).
HIDDEN_SHARE = 0.0
HIDDEN_LOSS = 0.005  # the out-of-fold hit@1 the gates may cost those steps
DELTAS = (*(round(0.05 * i, 2) for i in range(20)), 1.0)
# Over a cold first without reports the model never lifts: chosen out of fold among DELTAS
# too, this gate kept the out-of-fold loss of the steps whose tool read as unreported within
# HIDDEN_LOSS and still lost 0.053 of hit@1 on held-out MetaTool queries of tools never
# reported (docs/ROUTING.md, "Learning from reports"); never lifting loses none by design.
COLD_DELTAS = (1.0,)


OBJECTIVES = ("binary", "lambdarank")


@dataclass(frozen=True, slots=True)
class Trees:
    """How the trees are fitted: ``objective`` "binary" (scikit-learn's
    HistGradientBoostingClassifier: is this row the step's tool) or "lambdarank" (LightGBM's
    LGBMRanker, each step's rows one group: is this row above the step's others;
    ``truncation``: its ``lambdarank_truncation_level``)."""

    iterations: int = 100
    learning_rate: float = 0.1
    leaves: int = 15
    min_leaf: int = 20
    l2: float = 1.0
    seed: int = 0
    objective: str = "binary"
    truncation: int = DEPTH

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"unknown objective {self.objective!r}; one of {OBJECTIVES}")


# The served trees: scikit-learn's binary trees (docs/ROUTING.md, "Learning from reports").
# With a step's every reported tool right (one group a text), on MetaTool's replays, seeds
# 0-2, the guard served +0.083 mean hit@1 at a calibration error of 0.072 / 0.034 / 0.048;
# LightGBM's lambdarank (31 leaves, an option: lightgbm is a dev dependency) +0.081 at
# 0.105 / 0.046 / 0.063. With one tool a step, lambdarank had served more (+0.077 vs +0.044).
DEFAULT_TREES = Trees()


@dataclass(frozen=True, slots=True)
class Rows:
    """The training rows: ``x`` (rows, features), ``y``, ``weight``, each row's ``step``
    (its text's first row of the bank) and where each text's rows start (``starts``, one
    past): a group a text, weighted as its best read step."""

    x: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    step: np.ndarray
    starts: np.ndarray
    hidden: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # per step
    known: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # per step: its
    # cold first has reports, or other reported steps passed it over
    passed: dict[str, np.ndarray] = field(default_factory=dict)  # Reranker.passed

    @property
    def steps(self) -> int:
        return int(self.starts.size - 1)


def bank_of(steps: Sequence[RememberedStep], vectors: np.ndarray, needed: int) -> Bank:
    """The bank of ``steps`` (one vector row each), at the weight every key sees."""
    return Bank.build(
        vectors,
        [s.tool for s in steps],
        [s.shared(needed) for s in steps],
        [s.text for s in steps],
    )


COSINE_BATCH = 256  # steps whose cosines with every tool are computed together
COSINE_BLOCK_BYTES = 1 << 21  # a block of the tool matrix that stays in a core's cache
ALIGN = 64  # a block's rows: a multiple of the rows BLAS takes at once in a matrix-vector product


def cold_answers(
    router: Router,
    view: NamespaceView,
    texts: Sequence[str],
    vectors: np.ndarray,
    steps: Sequence[int],
    depth: int,
) -> dict[int, list[Candidate]]:
    """Each of ``steps`` routed cold for its top ``depth``: one route each, as a serving
    process routes it, but their cosines with every tool computed ``COSINE_BATCH`` steps at
    a time (``batch_cosines``)."""
    tools = view.index.embeddings
    options = RouteOptions(k=depth)
    out: dict[int, list[Candidate]] = {}
    for start in range(0, len(steps), COSINE_BATCH):
        batch = steps[start : start + COSINE_BATCH]
        units = [(i, unit_rows(vectors[i], 1, tools.shape[1])) for i in batch if tools.shape[1]]
        known = [(i, u) for i, u in units if u is not None]
        given: dict[int, Cosines] = {}
        if known:
            product = batch_cosines(tools, np.concatenate([u for _, u in known]))
            given = {i: _given(product[j : j + 1]) for j, (i, _) in enumerate(known)}
        for i in batch:
            cosines = given.get(i, gemv_rows)
            out[i] = router.cold(view, texts[i], vectors[i], options, cosines=cosines)
    return out


def batch_cosines(matrix: np.ndarray, units: np.ndarray) -> np.ndarray:
    """``gemv_rows(matrix, units)``, the same numbers, a block of tools at a time: each block
    is read from memory once for every step instead of the whole matrix once a step (at
    10,000 tools that read was most of a route). Still a matrix-vector product a step and a
    block: one matrix product would sum in another order and move the features by ~1e-7,
    enough to change the gate chosen out of fold where two gates tie."""
    fits = COSINE_BLOCK_BYTES // max(matrix.shape[1] * matrix.itemsize, 1)
    rows = max(ALIGN, fits // ALIGN * ALIGN)  # where the whole product's row groups begin
    out = np.empty((len(units), len(matrix)), dtype=np.result_type(matrix, units))
    for start in range(0, len(matrix), rows):
        block = matrix[start : start + rows]
        for j, row in enumerate(units):
            out[j, start : start + rows] = block @ row
    return out


def _given(row: np.ndarray) -> Cosines:
    """A cosine product that answers with ``row``, computed before."""
    return lambda _matrix, _unit: row


def text_groups(bank: Bank) -> list[np.ndarray]:
    """The bank's rows grouped by step text (every tool reported for one text: an agent
    that called two tools for a step reported both), in the order each text first comes."""
    rows: dict[str, list[int]] = {}
    for i, text in enumerate(bank.texts):
        rows.setdefault(text, []).append(i)
    return [np.asarray(r, dtype=np.int64) for r in rows.values()]


def reported_for(bank: Bank, rows: np.ndarray) -> frozenset[str]:
    """The tools of a text's ``rows`` that some key may read (shared weight above 0): the
    text's right tools. A tool no key may read (one key's alone) is none of them."""
    return frozenset(bank.tools[r] for r in rows.tolist() if bank.weights[r] > 0)


def training_rows(
    index: RouterIndex,
    config: RouterConfig,
    bank: Bank,
    vectors: np.ndarray,
    depth: int = DEPTH,
    limit: int = MAX_TRAINING_STEPS,
    hidden: float = HIDDEN_SHARE,
    routed: dict[str, list[Candidate]] | None = None,
) -> Rows:
    """The rows of the bank's texts (at most ``limit`` of them) with a reported tool among
    their cold candidates, a group each (module doc). ``routed``: step text → its cold
    answer, read and added to (the guard trains several models on the same steps; a cold
    route does not change)."""
    router = Router(config)
    view = NamespaceView(index)
    xs, ys, weights, owners, starts, hid = [], [], [], [], [0], []
    known: list[bool | None] = []
    groups = text_groups(bank)
    readable = [g for g, rows in enumerate(groups) if bank.weights[rows].max() > 0]
    chosen = np.asarray(readable, dtype=np.int64)
    if chosen.size > limit:
        chosen = np.sort(np.random.default_rng(0).choice(chosen, limit, replace=False))
    firsts = [int(groups[g][0]) for g in chosen.tolist()]  # a group's text is its first row's
    hide = np.random.default_rng(1).random(len(groups)) < hidden
    everything = frozenset(bank.tools)
    routed = {} if routed is None else routed
    new = [i for i in firsts if bank.texts[i] not in routed]
    for i, answer in cold_answers(router, view, bank.texts, vectors, new, depth).items():
        routed[bank.texts[i]] = answer
    answers = {g: routed[bank.texts[int(groups[g][0])]] for g in chosen.tolist()}
    right = {g: reported_for(bank, groups[g]) for g in chosen.tolist()}
    passing: dict[str, list[int]] = {}  # the cold first → the steps that passed it over
    for g, answer in answers.items():
        if answer and answer[0].name not in right[g]:
            passing.setdefault(answer[0].name, []).extend(groups[g].tolist())
    passed = {t: np.asarray(at, dtype=np.int64) for t, at in passing.items()}
    for g in chosen.tolist():
        rows, tools = groups[g], right[g]
        i = int(rows[0])
        answer = answers[g]
        names = [c.name for c in answer]
        if not tools & set(names):
            continue
        first = names[0]
        step = unit(vectors[i])
        over = passed_over(bank, passed.get(first), step, None, left_out=rows)
        known.append(over or None)
        visible = everything - tools if hide[g] else None
        x = features(answer, step, stems(bank.texts[i]), bank, visible, left_out=rows)
        xs.append(x)
        ys.append(np.asarray([n in tools for n in names], dtype=np.float64))
        weights.append(np.full(len(names), float(bank.weights[rows].max())))
        owners.append(np.full(len(names), i))
        starts.append(starts[-1] + len(names))
        hid.append(bool(hide[g]))
        if not known[-1]:
            known[-1] = bool(x[0, FEATURES.index("report_count")] > 0)
    if not xs:
        empty = np.zeros((0, len(FEATURES)))
        return Rows(empty, np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(1, np.int64))
    return Rows(
        np.concatenate(xs),
        np.concatenate(ys),
        np.concatenate(weights),
        np.concatenate(owners),
        np.asarray(starts, dtype=np.int64),
        np.asarray(hid, dtype=bool),
        np.asarray(known, dtype=bool),
        passed,
    )


BINS = 255  # the histogram bins of a feature (scikit-learn's most)


def bin_edges(column: np.ndarray, weight: np.ndarray, bins: int = BINS) -> np.ndarray:
    """Where scikit-learn's HistGradientBoosting cuts ``column`` into at most ``bins`` bins
    (``_find_binning_thresholds``, as of 1.9): between its distinct values when it has that
    few, else at its weighted percentiles ("averaged inverted CDF"), here with one sort a
    feature (scikit-learn sorts it again for each of its 254 edges). A value ``x`` is in bin
    ``k`` when ``edges[k - 1] < x <= edges[k]``."""
    kept = weight != 0
    column, weight = column[kept], weight[kept]
    distinct = np.unique(column)
    if distinct.size <= 1:
        return np.zeros(0)
    if distinct.size <= bins:
        return (distinct[:-1] + distinct[1:]) / 2
    order = np.argsort(column)
    values, cdf = column[order], np.cumsum(weight[order])
    wanted = np.linspace(0, 100, bins + 1)[1:-1] / 100 * cdf[-1]
    at = np.minimum(np.searchsorted(cdf, wanted), values.size - 1)
    exact = cdf[at] - wanted <= np.finfo(np.float64).eps  # on a point: average with the next
    found = np.where(
        exact, (values[at] + values[np.minimum(at + 1, values.size - 1)]) / 2, values[at]
    )
    return np.unique(found)


@dataclass(frozen=True, slots=True)
class Binned:
    """Rows as their features' bin numbers (``codes``), and each feature's ``edges``
    (features, BINS - 1; padded with +inf) to read a split on bin numbers back as one on
    the features' values."""

    codes: np.ndarray
    edges: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, weight: np.ndarray) -> Binned:
        codes = np.zeros(x.shape, dtype=np.float64)
        edges = np.full((x.shape[1], BINS - 1), np.inf)
        for j in range(x.shape[1]):
            cut = bin_edges(x[:, j], weight)
            edges[j, : cut.size] = cut
            codes[:, j] = np.searchsorted(cut, x[:, j], side="left")
        return cls(codes, edges)

    def on_values(self, forest: Forest) -> Forest:
        """``forest`` (fitted on the codes) with its splits on the features' values: a split
        between bins k and k + 1 is one at ``edges[k]``."""
        if forest.feature.size == 0:
            return forest
        k = np.clip(np.floor(forest.threshold), 0, BINS - 2).astype(np.int64)
        threshold = np.where(forest.leaf, 0.0, self.edges[forest.feature, k])
        return dataclasses.replace(forest, threshold=threshold)


def fit_forest(
    x: np.ndarray,
    y: np.ndarray,
    weight: np.ndarray,
    trees: Trees,
    starts: np.ndarray | None = None,
) -> Forest:
    """The trees fitted on rows ``x`` with labels ``y``, as a plain ``Forest`` (``starts``:
    where each step's rows start, one past the last; a ranker needs them)."""
    if trees.objective == "lambdarank":
        if starts is None:
            raise ValueError("a ranker is fitted on steps: starts are needed")
        return fit_ranker(x, y, weight, starts, trees)
    return fit_binned(Binned.of(x, weight), y, weight, trees)


def fit_ranker(
    x: np.ndarray, y: np.ndarray, weight: np.ndarray, starts: np.ndarray, trees: Trees
) -> Forest:
    """LightGBM's lambdarank trees on the steps' rows (each step one group), as a plain
    ``Forest`` whose scores read as a softmax over a step's candidates.

    Bounded influence: LightGBM multiplies each row's lambda gradient and hessian by its
    weight, so rows weighted by their step's weight weigh the step as a group (a step of
    weight 0 trains exactly as if it were left out; measured). One OpenMP thread, as for
    the binary trees; lightgbm is imported here, in the background trainer only."""
    sizes = np.diff(starts)
    if not (y > 0).any() or sizes.size == 0:  # nothing to rank by: every candidate alike
        return flat([], 0.0, "softmax")
    model = lambdarank_model(trees)
    model.fit(x, y, group=sizes, sample_weight=weight)
    return dumped_forest(model.booster_.dump_model())


def lambdarank_model(trees: Trees) -> Any:
    """LightGBM's unfitted ``LGBMRanker`` for ``trees`` (lambdarank, one thread,
    deterministic)."""
    from lightgbm import LGBMRanker

    return LGBMRanker(
        objective="lambdarank",
        n_estimators=trees.iterations,
        learning_rate=trees.learning_rate,
        num_leaves=trees.leaves,
        min_child_samples=trees.min_leaf,
        reg_lambda=trees.l2,
        random_state=trees.seed,
        lambdarank_truncation_level=trees.truncation,
        n_jobs=1,
        deterministic=True,
        force_row_wise=True,
        verbose=-1,
    )


def dumped_forest(dump: dict[str, Any]) -> Forest:
    """A LightGBM model's trees (``Booster.dump_model()``, numerical splits ``<=``) as one
    ``Forest`` with a softmax link: each tree's nodes numbered in preorder, a leaf's value
    its ``leaf_value``. A NaN goes right in a ``Forest``, where LightGBM reads it as 0 (the
    features are never NaN)."""
    trees = [tree_nodes(info["tree_structure"]) for info in dump["tree_info"]]
    return flat(trees, 0.0, "softmax")


NODE = np.dtype(
    [
        ("feature_idx", np.int64),
        ("num_threshold", np.float64),
        ("left", np.int64),
        ("right", np.int64),
        ("value", np.float64),
        ("is_leaf", bool),
        ("depth", np.int64),
    ]
)


def tree_nodes(root: dict[str, Any]) -> np.ndarray:
    """One dumped LightGBM tree as node records (the fields ``flat`` reads), in preorder."""
    nodes: list[tuple[int, float, int, int, float, bool, int]] = []

    def visit(node: dict[str, Any], depth: int) -> int:
        at = len(nodes)
        if "leaf_value" in node:
            nodes.append((0, 0.0, 0, 0, float(node["leaf_value"]), True, depth))
            return at
        if node["decision_type"] != "<=":
            raise ValueError(f"a split {node['decision_type']!r}: only numerical ones are read")
        nodes.append(
            (int(node["split_feature"]), float(node["threshold"]), 0, 0, 0.0, False, depth)
        )
        left = visit(node["left_child"], depth + 1)
        right = visit(node["right_child"], depth + 1)
        nodes[at] = (*nodes[at][:2], left, right, *nodes[at][4:])
        return at

    visit(root, 0)
    return np.array(nodes, dtype=NODE)


def fit_binned(binned: Binned, y: np.ndarray, weight: np.ndarray, trees: Trees) -> Forest:
    """The trees fitted on binned rows, as a plain ``Forest`` on the features' values.

    The rows are binned here (``Binned``), so scikit-learn's binning, which sorts a weighted
    feature once for each of its 254 edges, finds each feature already in bins. The trees
    are fitted on one OpenMP thread: on a machine whose cores serve routes, two threads
    waiting on each other's barrier cost several times one thread's work. scikit-learn is
    imported here, in the background trainer: a process that only routes never loads it
    (it probes torch on import, which a route's process may not have)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    model = HistGradientBoostingClassifier(
        max_iter=trees.iterations,
        learning_rate=trees.learning_rate,
        max_leaf_nodes=trees.leaves,
        min_samples_leaf=trees.min_leaf,
        l2_regularization=trees.l2,
        early_stopping=False,
        random_state=trees.seed,
    )
    if np.unique(y).size < 2:  # one class: a constant model
        p = float(np.clip(y.mean() if y.size else 0.5, 1e-6, 1 - 1e-6))
        return flat([], float(np.log(p / (1 - p))))
    with threadpool_limits(limits=1, user_api="openmp"):
        model.fit(binned.codes, y, sample_weight=weight)
    return binned.on_values(fit_flat(model))


def fit_flat(model: HistGradientBoostingClassifier) -> Forest:
    """A fitted binary classifier's trees as one ``Forest`` (its private predictors)."""
    trees = [round_[0].nodes for round_ in model._predictors]
    return flat(trees, float(np.ravel(model._baseline_prediction)[0]))


def flat(trees: Sequence[np.ndarray], baseline: float, link: str = "logistic") -> Forest:
    """Trees' node arrays (scikit-learn's ``TreePredictor.nodes``) as one ``Forest``."""
    if not trees:
        zero = np.zeros((0, 1))
        return Forest(
            zero.astype(np.int64),
            zero,
            zero.astype(np.int64),
            zero.astype(np.int64),
            zero,
            zero.astype(bool),
            baseline,
            0,
            link,
        )
    width = max(len(t) for t in trees)
    shape = (len(trees), width)
    feature = np.zeros(shape, np.int64)
    threshold = np.zeros(shape)
    left = np.zeros(shape, np.int64)
    right = np.zeros(shape, np.int64)
    value = np.zeros(shape)
    leaf = np.ones(shape, bool)
    for i, nodes in enumerate(trees):
        n = len(nodes)
        feature[i, :n] = nodes["feature_idx"]
        threshold[i, :n] = nodes["num_threshold"]
        left[i, :n] = nodes["left"]
        right[i, :n] = nodes["right"]
        value[i, :n] = nodes["value"]
        leaf[i, :n] = nodes["is_leaf"]
    depth = int(max(int(t["depth"].max()) for t in trees)) + 1
    return Forest(feature, threshold, left, right, value, leaf, baseline, depth, link)


@dataclass(frozen=True, slots=True)
class Choices:
    """Per step, what a gate decides between: the model's best against the cold first
    (``gap``), whether each is the step's tool, and whether the cold first has reports."""

    gap: np.ndarray
    best_right: np.ndarray
    cold_right: np.ndarray
    cold_reported: np.ndarray
    hidden: np.ndarray

    @classmethod
    def of(cls, chance: np.ndarray, rows: Rows) -> Choices:
        gap, best_right, cold_right = [], [], []
        for s in range(rows.steps):
            a, b = int(rows.starts[s]), int(rows.starts[s + 1])
            p = chance[a:b]
            best = int(np.argmax(p))
            gap.append(p[best] - p[0] if best != 0 else -1.0)
            best_right.append(bool(rows.y[a + best]))
            cold_right.append(bool(rows.y[a]))
        return cls(
            np.asarray(gap),
            np.asarray(best_right),
            np.asarray(cold_right),
            rows.known if rows.known.size == rows.steps else np.ones(rows.steps, bool),
            rows.hidden if rows.hidden.size == rows.steps else np.zeros(rows.steps, bool),
        )

    def hits(self, delta: float, delta_cold: float) -> np.ndarray:
        """Per step, whether its tool is first with these gates."""
        gate = np.where(self.cold_reported, delta, delta_cold)
        lifted = self.gap > gate
        return np.where(lifted, self.best_right, self.cold_right)


def first_hits(chance: np.ndarray, rows: Rows, delta: float, delta_cold: float = -1) -> int:
    """How many steps keep their tool first with the gates (``delta_cold``: for a cold first
    without reports; -1: ``delta``)."""
    cold = delta if delta_cold < 0 else delta_cold
    return int(Choices.of(chance, rows).hits(delta, cold).sum())


def out_of_fold(rows: Rows, trees: Trees, folds: int = FOLDS) -> np.ndarray:
    """Each row's probability from trees fitted without its fold (folds of steps, in order;
    each fit's rows binned on their own, as scikit-learn bins them)."""
    chance = np.zeros(rows.y.size)
    cuts = np.linspace(0, rows.steps, folds + 1).round().astype(int)
    for f in range(folds):
        lo, hi = rows.starts[cuts[f]], rows.starts[cuts[f + 1]]
        if hi <= lo:
            continue
        mask = np.zeros(rows.y.size, bool)
        mask[lo:hi] = True
        weight = rows.weight[~mask]
        before = rows.starts[: cuts[f] + 1]
        after = rows.starts[cuts[f + 1] + 1 :] - (hi - lo)
        starts = np.concatenate([before, after])  # the other folds' steps, rows closed up
        forest = fit_forest(rows.x[~mask], rows.y[~mask], weight, trees, starts)
        held = rows.starts[cuts[f] : cuts[f + 1] + 1] - lo
        chance[mask] = forest.probabilities(rows.x[mask], held)
    return chance


def choose_delta(chance: np.ndarray, rows: Rows) -> tuple[float, float]:
    """The gates (``delta``, ``delta_cold``) keeping the most steps' tool first out of fold,
    among those that lose at most ``HIDDEN_LOSS`` of hit@1 on the steps whose tool read as
    never reported (the largest among equals); (1, 1), never lifting, when none does."""
    choices = Choices.of(chance, rows)
    hidden = choices.hidden
    cold = choices.cold_right[hidden].mean() if hidden.any() else 0.0
    best: tuple[int, float, float] = (-1, 1.0, 1.0)
    for delta in DELTAS:
        for delta_cold in COLD_DELTAS:
            hits = choices.hits(delta, delta_cold)
            if hidden.any() and hits[hidden].mean() < cold - HIDDEN_LOSS:
                continue
            best = max(best, (int(hits.sum()), delta, delta_cold))
    return best[1], best[2]


def train_reranker(
    index: RouterIndex,
    config: RouterConfig,
    bank: Bank,
    vectors: np.ndarray,
    trees: Trees = DEFAULT_TREES,
    depth: int = DEPTH,
    routed: dict[str, list[Candidate]] | None = None,
) -> Reranker:
    """A reranker trained on the steps of ``bank`` (``vectors``: one row each; ``routed``:
    ``training_rows``')."""
    rows = training_rows(index, config, bank, vectors, depth, routed=routed)
    gates = choose_delta(out_of_fold(rows, trees), rows) if rows.steps >= FOLDS else (1.0, 1.0)
    forest = fit_forest(rows.x, rows.y, rows.weight, trees, rows.starts)
    return Reranker(forest, bank, gates[0], depth, gates[1], rows.passed)
