"""The key table: make a key (its secret shown once), list the keys, revoke one.

For an admin key limited to no namespace only; the environment's keys are not listed here.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from app.api.error_handlers import ERROR_SHAPE
from app.deps import KeyAdminDep, SessionDep
from app.keys import service as keys
from app.keys.service import KeyCreate, KeyCreated, KeyList

router = APIRouter(prefix="/v1/keys", tags=["keys"])
ERRORS: dict[int | str, dict[str, Any]] = {c: ERROR_SHAPE for c in (401, 403, 404, 409, 422, 503)}


@router.post("", status_code=201, response_model=KeyCreated, responses=ERRORS)
def create_key(request: KeyCreate, session: SessionDep, _admin: KeyAdminDep) -> KeyCreated:
    """Make a key; the answer holds its secret, which is never shown again. It works on this
    replica at once and on every replica within `TOOLREACH_KEY_REFRESH_SECONDS`."""
    return keys.create_key(session, request)


@router.get("", response_model=KeyList, responses=ERRORS)
def list_keys(session: SessionDep, _admin: KeyAdminDep) -> KeyList:
    """The keys not revoked: id, role, namespaces, label, created and last used; no secret."""
    return keys.list_keys(session)


@router.delete("/{key_id}", status_code=204, responses=ERRORS)
def revoke_key(key_id: str, session: SessionDep, _admin: KeyAdminDep) -> Response:
    """Revoke a key: refused here at once, on every replica within
    `TOOLREACH_KEY_REFRESH_SECONDS`. Revoking it again changes nothing."""
    keys.revoke_key(session, key_id)
    return Response(status_code=204)
