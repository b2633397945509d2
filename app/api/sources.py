"""Admin API of sources: register one (read at once), list, read, sync, remove."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from fastapi import APIRouter, Response

from app.api.error_handlers import ERROR_SHAPE
from app.capacity.slots import ImportSlot
from app.deps import ServicesDep, SessionDep, UnscopedAdminDep
from app.errors import Unavailable
from app.schemas import Namespace
from app.sources.schemas import SourceCreate, SourceList, SourceRead, SyncReport
from app.sources.service import SourceService

if TYPE_CHECKING:
    from app.services import Services

router = APIRouter(prefix="/v1/sources", tags=["sources"])
ERRORS: dict[int | str, dict[str, Any]] = {
    code: ERROR_SHAPE for code in (400, 401, 403, 404, 409, 413, 422, 502, 503)
}


def _sources(services: Services) -> SourceService:
    if services.sources is None:
        raise Unavailable("sources are not running")
    return services.sources


@router.post("", status_code=201, response_model=SyncReport, responses=ERRORS)
async def add_source(
    body: SourceCreate, services: ServicesDep, _admin: UnscopedAdminDep, _slot: ImportSlot
) -> SyncReport:
    """Register a source and read its tools now; 502 (nothing stored) if it cannot be read."""
    return await _sources(services).register(body)


@router.get("", response_model=SourceList, responses=ERRORS)
def list_sources(
    session: SessionDep,
    services: ServicesDep,
    _admin: UnscopedAdminDep,
    namespace: Namespace | None = None,
) -> SourceList:
    """Every registered source, its credentials as references only."""
    return _sources(services).list_sources(session, namespace)


@router.get("/{name}", response_model=SourceRead, responses=ERRORS)
def get_source(
    name: str, session: SessionDep, services: ServicesDep, _admin: UnscopedAdminDep
) -> SourceRead:
    """One source: its configuration, tool counts, last sync and last error."""
    return _sources(services).read(session, name)


@router.post("/{name}/sync", response_model=SyncReport, responses=ERRORS)
async def sync_source(
    name: str,
    services: ServicesDep,
    _admin: UnscopedAdminDep,
    _slot: ImportSlot,
    force: bool = False,
) -> SyncReport:
    """Read the source again: changed tools get a new version, removed ones are retired."""
    return await _sources(services).sync(name, force=force)


@router.delete("/{name}", status_code=204, responses=ERRORS)
async def remove_source(name: str, services: ServicesDep, _admin: UnscopedAdminDep) -> Response:
    """Forget the source; its tools are retired (their versions stay readable)."""
    sources = _sources(services)
    await anyio.to_thread.run_sync(sources.remove, name)
    if services.gateway is not None:
        await services.gateway.pool.drop(name)
    return Response(status_code=204)
