"""The SQL of the key table: add, list, revoke, the active keys, and when each was last used."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from app.keys.models import ApiKey


def add_key(session: Session, row: ApiKey) -> None:
    session.add(row)
    session.flush()


def list_keys(session: Session) -> list[ApiKey]:
    """The keys not revoked, oldest first."""
    query = select(ApiKey).where(ApiKey.revoked_at.is_(None)).order_by(ApiKey.created_at, ApiKey.id)
    return list(session.scalars(query))


def find_key(session: Session, key_id: str) -> ApiKey | None:
    return session.get(ApiKey, key_id)


def revoke_key(session: Session, key_id: str, now: datetime) -> None:
    """Revoke the key (once: a second revocation keeps the first time)."""
    session.execute(
        update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=now)
    )


ActiveKey = tuple[str, str, str, list[str] | None]  # id, key_hash, role, namespaces
TableMark = tuple[int, int]


def table_mark(session: Session) -> TableMark:
    """(keys made, keys revoked): each only grows (a key is never deleted nor revoked twice),
    so any key made or revoked changes it. One aggregate: cheap to ask every interval."""
    made, revoked = session.execute(
        select(func.count(), func.count(ApiKey.revoked_at)).select_from(ApiKey)
    ).one()
    return int(made), int(revoked)


def active_keys(session: Session) -> list[ActiveKey]:
    """Every key not revoked, as plain columns (no ORM objects: read every refresh)."""
    query = select(ApiKey.id, ApiKey.key_hash, ApiKey.role, ApiKey.namespaces).where(
        ApiKey.revoked_at.is_(None)
    )
    return [(i, h, r, n) for i, h, r, n in session.execute(query).tuples()]


def record_last_used(session: Session, used: Mapping[str, datetime]) -> None:
    """Move each key's ``last_used_at`` forward to its time in ``used`` (never back)."""
    for key_id, moment in used.items():
        session.execute(
            update(ApiKey)
            .where(
                ApiKey.id == key_id,
                or_(ApiKey.last_used_at.is_(None), ApiKey.last_used_at < moment),
            )
            .values(last_used_at=moment)
        )
