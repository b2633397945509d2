"""The card doctor: advice from a namespace's reported misroutes, checked by replay, and
applying one (app/advice/). Off the route path: a replay can take seconds."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.advice import service as doctor
from app.api.error_handlers import ERROR_SHAPE
from app.deps import AdminDep, EncoderDep, IndexDep, SessionDep, ViewerDep
from app.keys.scope import require_writable
from app.schemas import Namespace

router = APIRouter(prefix="/v1/advice", tags=["advice"])
ERRORS: dict[int | str, dict[str, Any]] = {c: ERROR_SHAPE for c in (401, 403, 404, 409, 422)}
NamespaceArg = Annotated[Namespace, Query(description="the namespace whose reports are read")]


@router.get("", responses=ERRORS)
def list_advice(
    namespace: NamespaceArg,
    session: SessionDep,
    index: IndexDep,
    encoder: EncoderDep,
    viewer: ViewerDep,
) -> dict[str, Any]:
    """Findings from the namespace's reported steps, worst first, each with the replay that
    let it through (fixes at least one reported step, breaks none)."""
    if viewer.namespaces is not None and namespace not in viewer.namespaces:
        require_writable(namespace, viewer.namespaces)
    found = doctor.advice(session, index, encoder, namespace)
    return {"namespace": namespace, "advice": [doctor.as_json(f) for f in found]}


@router.post("/{advice_id}/apply", responses=ERRORS)
def apply_advice(
    advice_id: str,
    namespace: NamespaceArg,
    session: SessionDep,
    index: IndexDep,
    encoder: EncoderDep,
    admin: AdminDep,
) -> dict[str, Any]:
    """Write the finding's changes as new versions of its cards, after replaying it again on
    the present state (409 if it no longer holds); which (tool, version) were written."""
    require_writable(namespace, admin.namespaces)
    written = doctor.apply(session, index, encoder, namespace, advice_id)
    return {"namespace": namespace, "advice": advice_id, "written": written}
