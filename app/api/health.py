"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.db import database_reachable
from app.deps import ServicesDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
def readyz(services: ServicesDep) -> JSONResponse | dict[str, object]:
    """The database is reachable and the index is loaded: how many namespaces and tools.

    Counts only: this answers anyone, and namespace names are what a key's scope hides.
    """
    if not database_reachable(services.engine):
        error = {"code": "unavailable", "message": "the database is not reachable", "details": None}
        return JSONResponse({"error": error}, status_code=503)
    sizes = services.index.namespaces()
    return {
        "status": "ready",
        "revision": services.index.revision,
        "namespaces": len(sizes),
        "tools": sum(sizes.values()),
    }
