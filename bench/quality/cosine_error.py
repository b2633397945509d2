"""How far the int8 first pass's cosines are from float32 ones, on a real dataset.

Embeds a dataset's tools and queries with the service's encoder (as ``toolreach eval`` does),
then, for each ``--dims``, builds the int8 copy of
``app/embedding/cosines.py`` and reports, over every
query × tool pair: the cosine error (mean, 99th percentile, max), how much smaller the row's
spread is (the z-score's divisor), and the share of each query's exact top 50 found in its
approximate top 128 (the best that ``exact_where_it_counts`` rescores):

    .venv/bin/python -m bench.quality.cosine_error --data ../shared/data/seal-tools \\
        --dims 0 192 256 384
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from app.cli.evaluate import _encode_queries, load_dataset
from app.embedding.cosines import Int8Matrix
from app.routing.signals import EXACT_TOP
from app.services import build_encoder
from app.settings import Settings
from bench.common import add_data, parser
from bench.registries import registered

TOP = 50  # the router's pool


def vectors(data: Path) -> tuple[np.ndarray, np.ndarray]:
    """The dataset's tool matrix as the index holds it, and one unit row per query."""
    settings = Settings(_env_file=None)
    encoder = build_encoder(settings)
    tools, queries = load_dataset(data)
    with registered(tools, settings, encoder) as (services, snapshot):
        matrix = np.array(snapshot.index.embeddings)
        rows = np.vstack(
            [v[0] for v in _encode_queries(services.encoder, [q.text for q in queries])]
        )
    return matrix, rows / np.linalg.norm(rows, axis=1, keepdims=True)


def compare(matrix: np.ndarray, queries: np.ndarray, dims: int) -> dict[str, float]:
    exact = queries @ matrix.T
    approx = np.vstack(
        [
            Int8Matrix(matrix, dims).cosines(queries[i : i + 256])
            for i in range(0, len(queries), 256)
        ]
    )
    error = np.abs(approx - exact)
    top = min(EXACT_TOP, matrix.shape[0])
    found = [
        len(set(np.argsort(-e)[:TOP]) & set(np.argsort(-a)[:top])) / min(TOP, len(e))
        for e, a in zip(exact, approx, strict=True)
    ]
    spread = approx.std(axis=1) / exact.std(axis=1)
    return {
        "dims": dims,
        "error_mean": round(float(error.mean()), 4),
        "error_p99": round(float(np.quantile(error, 0.99)), 4),
        "error_max": round(float(error.max()), 4),
        "spread_ratio_mean": round(float(spread.mean()), 4),
        "spread_ratio_min": round(float(spread.min()), 4),
        f"exact_top{TOP}_in_approx_top{top}": round(float(np.mean(found)), 4),
    }


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--dims", type=int, nargs="+", default=[0, 256])
    args = cli.parse_args(argv)
    matrix, queries = vectors(args.data)
    report = {
        "dataset": str(args.data),
        "tools": len(matrix),
        "queries": len(queries),
        "results": [compare(matrix, queries, d) for d in args.dims],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
