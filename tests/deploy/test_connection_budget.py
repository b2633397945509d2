"""The connections one replica may hold, as the settings make them (TOOLREACH_DATABASE_POOL_SIZE
+ TOOLREACH_DATABASE_MAX_OVERFLOW, app/settings.py, the database probe's own connection,
app/db_health.py, and the listener's, app/tools/listener.py), are the figure the chart's NOTES
and docs/DEPLOY.md budget with: a change to the pool shows up here first."""

from __future__ import annotations

from app.db import DatabaseLimits
from tests.deploy.tools import CHART, ROOT, helm

PROBE = 1  # the connection app/db_health.py's probe keeps of its own
LISTENER = 1  # the one app/tools/listener.py LISTENs on
OWN = PROBE + LISTENER


def pool_defaults() -> tuple[int, int]:
    defaults = DatabaseLimits()  # TOOLREACH_DATABASE_POOL_SIZE, TOOLREACH_DATABASE_MAX_OVERFLOW
    return defaults.pool_size, defaults.max_overflow


def notes(*values: str) -> str:
    sets = [arg for value in values for arg in ("--set", value)]
    done = helm("install", "toolreach", str(CHART), "--dry-run=client", "-n", "agents", *sets)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_docs_budget_the_pool_the_settings_default_to() -> None:
    size, overflow = pool_defaults()
    deploy_doc = (ROOT / "docs" / "DEPLOY.md").read_text()
    assert f"`pool_size={size}`" in deploy_doc
    assert f"`max_overflow={overflow}`" in deploy_doc
    assert f"up to **{size + overflow + OWN}**" in deploy_doc


def test_notes_sum_the_connections_at_the_autoscaler_maximum() -> None:
    size, overflow = pool_defaults()
    pods = 10 + 3  # maxReplicas, and maxSurge 25 % of it rounded up during a rollout
    assert f"{pods * (size + overflow + OWN)} with 10 replicas" in notes()


def test_notes_follow_the_pool_set_in_the_config() -> None:
    small = notes(
        "config.TOOLREACH_DATABASE_POOL_SIZE=2", "config.TOOLREACH_DATABASE_MAX_OVERFLOW=0"
    )
    assert "up to 4 per replica, 52 with 10 replicas" in small
