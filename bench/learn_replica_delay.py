"""How soon a replica routes with a new learned model: two services on one Postgres (the
poll an hour, so only the announcement counts), the scenario of tests/api/test_learning.py.

One model is trained and promoted on replica A; then ``--times`` new serving versions are
stored and announced on A as a promotion stores them (``repository.add_model``), and the
seconds from A's commit to B's ``LearningCache.get`` holding that version are printed.

    python bench/learn_replica_delay.py --times 10
"""

from __future__ import annotations

import argparse
import time
import uuid
from datetime import UTC, datetime

import psycopg

from app import migrate
from app.db import unit_of_work
from app.learning import repository
from tests.api import test_learning as scenario
from tests.conftest import ADMIN, PG_ADMIN_URL
from tests.waiting import until


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
                    session, scenario.NS, version, held, held.adapter.dim, {}, 0, True,
                    datetime.now(UTC),
                )  # fmt: skip
            started = time.perf_counter()  # committed
            until(lambda v=version: getattr(there.get(scenario.NS), "version", None) == v)
            measured.append(time.perf_counter() - started)
        return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=10)
    args = parser.parse_args()
    name = f"toolreach_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    try:
        url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
        migrate.upgrade(url)
        found = sorted(delays(url, args.times))
        ms = [round(s * 1000, 1) for s in found]
        print(f"commit on A -> B serves it: median {ms[len(ms) // 2]} ms, max {ms[-1]} ms: {ms}")
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
