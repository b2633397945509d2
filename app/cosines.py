"""One matrix product for the cosine rows of concurrent routes.

A route's embedding stage multiplies the namespace's tool matrix by its query vector: at
10,000 tools × 896 dimensions that streams 36 MB through the CPU for one row, ~2 ms of a
~3.8 ms route, bound by memory bandwidth. Concurrent routes against the same matrix are
coalesced (leader/follower, as in app/batching.py): the leader stacks every waiting request's
rows into one GEMM, which reads the matrix once for all of them, and hands each its rows.
Alone, a route is its own leader at once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from app.batching import LeaderFollower
from app.routing.signals import gemv_rows


@dataclass(eq=False)
class _Request:
    matrix: np.ndarray
    unit: np.ndarray
    rows: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


class CosineBatcher(LeaderFollower):
    """A ``Cosines`` function (see app/routing/signals.py) shared by concurrent routes."""

    def __init__(self, max_rows: int = 256) -> None:
        super().__init__()
        self.max_rows = max_rows
        self._queue: list[_Request] = []

    def __call__(self, matrix: np.ndarray, unit: np.ndarray) -> np.ndarray:
        request = _Request(matrix, unit)
        with self._cond:
            self._queue.append(request)
            self._serve_until(lambda: request.done)
        if request.error is not None:
            raise request.error
        assert request.rows is not None
        return request.rows

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
            if len(batch) == 1:
                products = [gemv_rows(batch[0].matrix, batch[0].unit)]
            else:
                stacked = np.vstack([r.unit for r in batch])
                product = (batch[0].matrix @ stacked.T).T  # one pass over the tool matrix
                bounds = np.cumsum([0] + [len(r.unit) for r in batch])
                products = [
                    np.ascontiguousarray(product[a:b]) for a, b in itertools.pairwise(bounds)
                ]
        except BaseException as exc:
            for request in batch:
                request.error, request.done = exc, True
            return
        for request, rows in zip(batch, products, strict=True):
            request.rows, request.done = rows, True
