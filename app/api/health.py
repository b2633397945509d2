"""Liveness and readiness: both answer on the event loop at once, and never touch the
database or a worker thread. Readiness reads the state the database probe keeps
(app/db_health.py), so a database that does not answer makes it a 503 at once, never a hang.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.api.error_handlers import DATABASE_RETRY_SECONDS, ERROR_SHAPE, error_response
from app.deps import CallerDep, HealthDep, IndexDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is alive (the database plays no part)."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None, responses={503: ERROR_SHAPE})
async def readyz(
    health: HealthDep, index: IndexDep, caller: CallerDep
) -> JSONResponse | dict[str, Any]:
    """Ready for traffic: the index is loaded and the database answers its probe.

    Without a key the answer says only that; an admin or dashboard key that no scope limits
    also sees the database's state and the index's namespaces (their names are what a
    scope hides).
    """
    state = health.state
    details: dict[str, Any] | None = None
    if caller.role in ("admin", "dashboard") and caller.namespaces is None:
        details = {
            "database": {
                "reachable": state.reachable,
                "since": state.since.isoformat(),
                "error": state.error,
            },
            "revision": index.revision,
            "namespaces": index.namespaces(),
        }
    if not state.reachable:
        return error_response(
            503,
            "unavailable",
            "the database is not reachable",
            details,
            headers={"Retry-After": str(DATABASE_RETRY_SECONDS)},
        )
    return {"status": "ready", **(details or {})}
