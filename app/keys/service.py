"""What ``/v1/keys`` does: make a key (its secret shown once), list the keys, revoke one.

Only an unscoped admin key may call these (app/deps.py, ``KeyAdminDep``). Each write marks
the session so that, once it commits, this replica reloads its keys at once; the others do
within ``TOOLREACH_KEY_REFRESH_SECONDS``.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.keys import repository
from app.keys.models import ApiKey
from app.keys.store import ENVIRONMENT_PREFIX, digest
from app.schemas import Namespace, Strict
from registry.errors import Conflict, NotFound
from registry.models import utcnow

SECRET_PREFIX = "trk_"
SECRET_BYTES = 32  # 256 bits: beyond any guessing (why no slow KDF: app/keys/store.py)


class KeyCreate(Strict):
    """A key to make: its role, the namespaces it is limited to (none: all), a label."""

    role: Literal["admin", "agent", "dashboard"]
    namespaces: Annotated[list[Namespace], Field(min_length=1, max_length=100)] | None = Field(
        default=None, description="the namespaces the key may see and (admin) write; null: all"
    )
    label: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        default=None, description="what the key is for, e.g. the agent or team that holds it"
    )


class KeyRead(BaseModel):
    """A key as listed: never its secret nor its digest."""

    id: str
    role: str
    namespaces: list[str] | None
    label: str | None
    created_at: datetime
    last_used_at: datetime | None = Field(
        description="to about a minute; null: not used yet (keys of the environment: not listed)"
    )

    @classmethod
    def from_row(cls, row: ApiKey) -> KeyRead:
        return cls.model_validate(row, from_attributes=True)  # the row's columns, by name


class KeyCreated(KeyRead):
    """The new key, with its secret: shown in this answer only, never again."""

    key: str = Field(description="the secret, for Authorization: Bearer; it cannot be read back")


class KeyList(BaseModel):
    """The keys of the table not revoked, oldest first."""

    keys: list[KeyRead]


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(SECRET_BYTES)


def create_key(session: Session, request: KeyCreate) -> KeyCreated:
    """Store a new key by its digest; the answer is the one place its secret appears."""
    secret = new_secret()
    namespaces = sorted(set(request.namespaces)) if request.namespaces is not None else None
    row = ApiKey(
        id=secrets.token_hex(8),
        key_hash=digest(secret),
        role=request.role,
        namespaces=namespaces,
        label=request.label,
        created_at=utcnow(),
    )
    repository.add_key(session, row)
    session.info["keys_changed"] = True
    return KeyCreated(**KeyRead.from_row(row).model_dump(), key=secret)


def list_keys(session: Session) -> KeyList:
    return KeyList(keys=[KeyRead.from_row(row) for row in repository.list_keys(session)])


def revoke_key(session: Session, key_id: str) -> None:
    """Revoke a key of the table (again: no change); NotFound for an id it never held, and
    Conflict for a key of the environment (it is removed from there)."""
    if key_id.startswith(ENVIRONMENT_PREFIX):
        raise Conflict(
            f"key {key_id!r} is set in the environment: remove it from TOOLREACH_ADMIN_KEYS, "
            "_AGENT_KEYS or _DASHBOARD_KEYS and restart"
        )
    if repository.find_key(session, key_id) is None:
        raise NotFound(f"no key {key_id!r}")
    repository.revoke_key(session, key_id, utcnow())
    session.info["keys_changed"] = True
