"""Admin API of sources: register one (read at once), list, read, sync, remove."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Response

from app.api.error_handlers import ERROR_SHAPE
from app.capacity.slots import ImportSlot
from app.deps import GatewayDep, SessionDep, SourcesDep, UnscopedAdminDep
from app.schemas import Namespace
from app.sources.schemas import SourceCreate, SourceList, SourceRead, SyncReport

router = APIRouter(prefix="/v1/sources", tags=["sources"])
ERRORS: dict[int | str, dict[str, Any]] = {
    code: ERROR_SHAPE for code in (400, 401, 403, 404, 409, 413, 422, 502, 503)
}


@router.post("", status_code=201, response_model=SyncReport, responses=ERRORS)
async def add_source(
    body: SourceCreate, sources: SourcesDep, _admin: UnscopedAdminDep, _slot: ImportSlot
) -> SyncReport:
    """Register a source and read its tools now; 502 (nothing stored) if it cannot be read."""
    return await sources.register(body)


@router.get("", response_model=SourceList, responses=ERRORS)
def list_sources(
    session: SessionDep,
    sources: SourcesDep,
    _admin: UnscopedAdminDep,
    namespace: Namespace | None = None,
) -> SourceList:
    """Every registered source, its credentials as references only."""
    return sources.list_sources(session, namespace)


@router.get("/{name}", response_model=SourceRead, responses=ERRORS)
def get_source(
    name: str, session: SessionDep, sources: SourcesDep, _admin: UnscopedAdminDep
) -> SourceRead:
    """One source: its configuration, tool counts, last sync and last error."""
    return sources.read(session, name)


@router.post("/{name}/sync", response_model=SyncReport, responses=ERRORS)
async def sync_source(
    name: str,
    sources: SourcesDep,
    _admin: UnscopedAdminDep,
    _slot: ImportSlot,
    force: bool = False,
) -> SyncReport:
    """Read the source again: changed tools get a new version, removed ones are retired."""
    return await sources.sync(name, force=force)


@router.delete("/{name}", status_code=204, responses=ERRORS)
async def remove_source(
    name: str, sources: SourcesDep, gateway: GatewayDep, _admin: UnscopedAdminDep
) -> Response:
    """Forget the source; its tools are retired (their versions stay readable)."""
    await anyio.to_thread.run_sync(sources.remove, name)
    await gateway.pool.drop(name)
    return Response(status_code=204)
