"""The connections one replica may hold, as app/db.py sets them, are the figure the chart's
NOTES and docs/DEPLOY.md budget with: a change to the pool shows up here first."""

from __future__ import annotations

import ast
import re

from tests.deploy.tools import CHART, ROOT, helm


def postgres_pool() -> tuple[int, int]:
    """pool_size and max_overflow of the Postgres engine in app/db.py::make_engine."""
    tree = ast.parse((ROOT / "app" / "db.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "create_engine":
            options = {k.arg: k.value for k in node.keywords}
            if "pool_size" in options:
                size, overflow = options["pool_size"], options["max_overflow"]
                assert isinstance(size, ast.Constant) and isinstance(overflow, ast.Constant)
                return int(size.value), int(overflow.value)
    raise AssertionError("app/db.py: no create_engine(..., pool_size=..., max_overflow=...)")


def test_chart_and_docs_budget_the_pool_app_db_sets() -> None:
    size, overflow = postgres_pool()
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    per_replica = re.search(r'define "toolreach.connectionsPerReplica" -}}(\d+)', helpers)
    assert per_replica and int(per_replica.group(1)) == size + overflow
    deploy_doc = (ROOT / "docs" / "DEPLOY.md").read_text()
    assert f"`pool_size={size}`" in deploy_doc
    assert f"`max_overflow={overflow}`" in deploy_doc
    assert f"up to **{size + overflow}**" in deploy_doc


def test_notes_sum_the_connections_at_the_autoscaler_maximum() -> None:
    size, overflow = postgres_pool()
    done = helm("install", "toolreach", str(CHART), "--dry-run=client", "--namespace", "agents")
    assert done.returncode == 0, done.stderr
    pods = 10 + 3  # maxReplicas, and maxSurge 25 % of it rounded up during a rollout
    assert f"{pods * (size + overflow)} with 10 replicas" in done.stdout
