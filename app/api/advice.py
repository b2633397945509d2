"""The card doctor: advice from a namespace's reported misroutes, checked by replay, and
applying one (app/advice/). Computed off the request path (app/advice/room.py): these
endpoints wait for the room on the event loop and hold no database connection."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.advice.room import outcome, waited
from app.advice.schemas import AdviceApplyRead, AdviceRead, AppliedRead, advice_read
from app.api.error_handlers import ERROR_SHAPE
from app.deps import AdminDep, AdviceDep, IndexDep, ViewerDep
from app.keys.scope import require_writable
from app.schemas import Namespace
from app.tools.namespaces import require_known

router = APIRouter(prefix="/v1/advice", tags=["advice"])
ERRORS: dict[int | str, dict[str, Any]] = {
    c: ERROR_SHAPE for c in (401, 403, 404, 409, 422, 429, 503)
}
NamespaceArg = Annotated[Namespace, Query(description="the namespace whose reports are read")]


@router.get("", response_model=AdviceRead, responses=ERRORS)
async def list_advice(
    namespace: NamespaceArg, index: IndexDep, room: AdviceDep, viewer: ViewerDep
) -> AdviceRead:
    """Findings from the namespace's reported steps, worst first, each with the replay that
    let it through (fixes at least one reported step, breaks none), and why the other
    misroutes have none; ``computing`` while not done within the wait."""
    require_known(index, namespace, viewer.namespaces)
    with room.waiting(viewer.key_id):
        advice = await waited(room.request(namespace), room.wait_seconds)
    if advice is None:
        return advice_read(namespace, room.cached(namespace), computing=True)
    return advice_read(namespace, advice)


@router.post("/{advice_id}/apply", response_model=AdviceApplyRead, responses=ERRORS)
async def apply_advice(
    advice_id: str, namespace: NamespaceArg, index: IndexDep, room: AdviceDep, admin: AdminDep
) -> AdviceApplyRead:
    """Write the finding's changes as new versions of its cards, after replaying it again on
    the present state (409 if it no longer holds); which (tool, version) were written."""
    require_writable(namespace, admin.namespaces)
    require_known(index, namespace, admin.namespaces)
    with room.waiting(admin.key_id):
        written = await outcome(room.apply(namespace, advice_id))
    return AdviceApplyRead(
        namespace=namespace,
        advice=advice_id,
        written=[AppliedRead.model_validate(w) for w in written],
    )
