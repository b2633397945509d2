"""The raw per-tool signals of one query: BM25 rows and cosine rows.

Rows cover every tool of the index (tag filtering selects columns afterwards): row 0 is the
whole step, rows 1… its parts when ``parts.step_parts`` reads several.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.routing.bm25 import bm25_row, bm25_scores
from app.routing.index import RouterIndex
from app.routing.parts import as_written, keyword_text, step_parts
from app.routing.window import step_window

# When a service's cosine rows are approximate (app/embedding/cosines.py), each row's best this many
# tools by embedding get their exact cosine (with the pool's worth of best keyword hits).
EXACT_TOP = 128
# When they are, the router (``pipeline.candidate_scores``) gives the best this many of its
# candidates by fused score their exact cosine before the final fusion.
RESCORED = 64


@dataclass(frozen=True, slots=True)
class QueryRows:
    """A query analysed once: its texts (whole step, then each part; ``text``: the whole
    step's window, where the rule check finds values), their tokens (of their values masked:
    ``parts.keyword_text``) and BM25 rows, and the tools the whole step's terms touch
    (``bm25_row``: one entry per term and tool)."""

    text: str
    texts: list[str]
    tokens: list[str]
    keyword: np.ndarray
    touched: np.ndarray
    part_tokens: tuple[list[str], ...] = ()  # each part's tokens (none for one part)


def analyse_query(
    index: RouterIndex, query: str, texts: Sequence[str] | None = None, split: bool = True
) -> QueryRows:
    """Read the step as its parts, tokenise and BM25-score it (one row per text, over all
    tools); ``split=False`` reads it as one part.

    ``texts``: the step's texts as ``query_texts(query, split=split)`` gives them, if the
    caller has them already (a service reads a step once, to embed it)."""
    text = step_window(query or "")
    if texts is None or (texts and texts[0] != text) or (not split and len(texts) > 1):
        parts = step_parts(text) if split else [text]
        texts = [text] if len(parts) < 2 else [text, *parts]
    texts = list(texts) or [text]
    tokens = [index.speller.analyse(keyword_text(t), as_written(t)) for t in texts]
    whole, touched = bm25_row(index.keyword, tokens[0])
    rows = (
        whole[None]
        if len(tokens) == 1
        else np.stack([whole, *(bm25_scores(index.keyword, t) for t in tokens[1:])])
    )
    return QueryRows(text, texts, tokens[0], rows, touched, tuple(tokens[1:]))


Cosines = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``(tool matrix (n, d), unit query rows (r, d)) → (r, n)`` cosine rows."""


def gemv_rows(matrix: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Row by row (GEMV): for a handful of rows this beats one small GEMM here."""
    return np.stack([matrix @ v for v in unit])


def unit_rows(query_vec: np.ndarray, n_texts: int, dim: int) -> np.ndarray | None:
    """The query rows the embedding stage multiplies: one per text, or the first alone when
    the vector does not have one row per text; unit length. ``None`` if the vector is
    unusable (empty, NaN); a dimension other than ``dim`` is a caller bug: ValueError."""
    vectors = np.asarray(query_vec, dtype=np.float32)
    vectors = vectors.reshape(1, -1) if vectors.ndim == 1 else vectors
    if vectors.ndim != 2 or vectors.size == 0:
        return None
    squares = np.einsum("ij,ij->i", vectors, vectors)  # NaN or inf if any value is
    if not np.isfinite(squares).all():
        if not np.isfinite(vectors).all():
            return None
        squares = np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64)  # huge values
    if vectors.shape[1] != dim:
        raise ValueError(f"query_vec has dimension {vectors.shape[1]}, the index {dim}")
    if vectors.shape[0] != n_texts:
        vectors, squares = vectors[:1], squares[:1]
    norms = np.sqrt(squares)
    unit: np.ndarray = (vectors / np.where(norms > 0, norms, 1.0)[:, None]).astype(np.float32)
    return unit


@dataclass(frozen=True, slots=True)
class CosineRows:
    """What ``cosines`` gave for a query: its rows (one per text, or a single row), the
    unit query rows, whether the rows are approximate (``rows`` may be the product's own:
    copy them before changing them), and, if the product estimates them, each approximate
    row's exact mean and spread over every tool (``(r, 2)``)."""

    rows: np.ndarray
    unit: np.ndarray
    approximate: bool
    moments: np.ndarray | None


def cosine_rows(
    index: RouterIndex, query_vec: np.ndarray, n_texts: int, cosines: Cosines = gemv_rows
) -> CosineRows | None:
    """The query's ``CosineRows``; ``None`` if the vector is unusable.

    A ``cosines`` with a ``with_moments(matrix, unit) -> (rows, moments)`` method gives the
    moments too (app/embedding/cosines.py); one with ``approximate(matrix) -> True`` says its
    rows are approximate."""
    unit = unit_rows(query_vec, n_texts, index.embeddings.shape[1])
    if unit is None:
        return None
    with_moments = getattr(cosines, "with_moments", None)
    rows, moments = (
        with_moments(index.embeddings, unit)
        if with_moments
        else (
            cosines(index.embeddings, unit),
            None,
        )
    )
    approximate = getattr(cosines, "approximate", None)
    if approximate is not None and approximate(index.embeddings):
        return CosineRows(rows, unit, True, moments)
    return CosineRows(rows, unit, False, None)


def multilingual_rows(index: RouterIndex, unit: np.ndarray) -> np.ndarray:
    """The cosine of the multilingual part alone (``index.multilingual`` columns), one row per
    unit query row, over every tool; exact float32 whatever the service's product.

    Each part of a mixed vector has the same norm in every row (encoders.MixEncoder), so this
    is the part's cosine times a constant, which z-scores ignore."""
    if index.multilingual is None:
        raise ValueError("the index has no multilingual columns")
    start, stop = index.multilingual
    rows: np.ndarray = (index.embeddings[:, start:stop] @ unit[:, start:stop].T).T
    return rows


def decisive_tools(
    rows: np.ndarray,
    keyword: np.ndarray | None,
    eligible: np.ndarray | None,
    keyword_top: int,
) -> np.ndarray:
    """Positions of the tools whose cosines can decide a route: among the eligible ones, each
    cosine row's ``EXACT_TOP`` best and the ``keyword_top`` best by keyword (best row); a
    tool may be named more than once."""
    sub = rows if eligible is None else rows[:, eligible]
    n = sub.shape[1]
    top = min(EXACT_TOP, n)
    picks = [np.argpartition(row, n - top)[n - top :] for row in sub]
    if keyword is not None and keyword_top > 0:
        best = keyword.max(axis=0) if len(keyword) > 1 else keyword[0]
        best = best if eligible is None else best[eligible]
        # Among the tools some query term touches (argpartition over a row of mostly equal
        # zeros is several times slower; docs/BENCHMARKS.md).
        hits = np.flatnonzero(best)
        if hits.size > keyword_top:
            scores = best[hits]
            hits = hits[np.argpartition(scores, scores.size - keyword_top)[-keyword_top:]]
        picks.append(hits)
    # Repeats are harmless (the same exact cosine written twice) and cheaper than np.unique
    # (docs/BENCHMARKS.md).
    chosen = np.concatenate(picks)
    return chosen if eligible is None else eligible[chosen]


def exact_where_it_counts(
    matrix: np.ndarray,
    unit: np.ndarray,
    rows: np.ndarray,
    keyword: np.ndarray | None,
    eligible: np.ndarray | None,
    keyword_top: int,
) -> None:
    """Replace, in ``rows``, approximate cosines by exact ones for the ``decisive_tools``.

    A tool reaches the router's pool by its embedding, its keywords or both: the best of
    either kind carry exact scores, so the approximation only chooses which tools those are
    (and moves the fusion's mean and spread a little).
    """
    tools = decisive_tools(rows, keyword, eligible, keyword_top)
    if tools.size:
        rows[:, tools] = (matrix[tools] @ unit.T).T
