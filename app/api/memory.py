"""Query memory through the admin API: what a tool remembers, and forgetting it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Query, Response

from app.api.error_handlers import ERROR_SHAPE
from app.api.tools import OneNamespace
from app.deps import AdminDep, MemoryDep, SessionDep
from app.loop.memory import forget

router = APIRouter(prefix="/v1/memory", tags=["memory"])


@router.delete(
    "/{name}", status_code=204, responses={c: ERROR_SHAPE for c in (401, 403, 404, 422, 503)}
)
def forget_memory(
    name: str,
    session: SessionDep,
    memory: MemoryDep,
    admin: AdminDep,
    background: BackgroundTasks,
    namespace: OneNamespace = None,
    route_id: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=64,
            description="forget only the remembered step this route reported",
        ),
    ] = None,
) -> Response:
    """Forget what query memory remembers of a tool: one step (`route_id`), or all of it."""
    forget(session, memory, admin.default_namespace(namespace), name, route_id, admin.namespaces)
    background.add_task(memory.wake)
    return Response(status_code=204)
