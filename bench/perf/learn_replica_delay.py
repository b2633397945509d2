"""How soon a replica routes with a new learned model: two services on one Postgres (the
poll an hour, so only the announcement counts), the scenario of tests/api/test_learning.py.

One model is trained and promoted on replica A; then ``--times`` new serving versions are
stored and announced on A as a promotion stores them (``repository.add_model``), and the
seconds from A's commit to B's ``LearningCache.get`` holding that version are printed.

    python -m bench.perf.learn_replica_delay --times 10
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from app import migrate
from app.db import unit_of_work
from app.learning import repository
from bench.common import parser
from bench.servers import scratch_database
from tests.api import test_learning as scenario
from tests.conftest import ADMIN
from tests.waiting import until


def serves(cache: Any, version: int) -> bool:
    """Whether the replica's learning cache holds this version of the namespace's model."""
    return getattr(cache.get(scenario.NS), "version", None) == version


def delays(url: str, times: int) -> list[float]:
    with scenario.started(url) as a, scenario.started(url) as b:
        for replica in (a, b):
            listener = scenario.services_of(replica).listener
            assert listener is not None and listener.connected.wait(10)
        tools = [{"name": n, "description": d} for n, (d, _) in scenario.PHRASES.items()]
        body = {"tools": tools, "namespace": scenario.NS}
        assert a.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        until(lambda: scenario.services_of(b).index.get(scenario.NS) is not None)
        scenario.report(a)
        assert scenario.train(a)["promoted"]
        there = scenario.services_of(b).learning
        here = scenario.services_of(a)
        assert there is not None and here.learning is not None
        held = here.learning.get(scenario.NS)
        assert held is not None
        measured = []
        for _ in range(times):
            with unit_of_work(here.session_factory) as session:
                version = repository.next_version(session, scenario.NS)
                repository.add_model(
                    session, scenario.NS, version, held, held.ranker.dim, {}, 0, True,
                    datetime.now(UTC),
                )  # fmt: skip
            started = time.perf_counter()  # committed
            until(partial(serves, there, version))
            measured.append(time.perf_counter() - started)
        return measured


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--times", type=int, default=10)
    args = cli.parse_args(argv)
    with scratch_database("toolreach_bench") as url:
        migrate.upgrade(url)
        found = sorted(delays(url, args.times))
    ms = [round(s * 1000, 1) for s in found]
    print(f"commit on A -> B serves it: median {ms[len(ms) // 2]} ms, max {ms[-1]} ms: {ms}")


if __name__ == "__main__":
    main()
