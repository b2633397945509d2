"""Dashboard sessions signed out before they expire, so that a copy of the cookie dies too.

A session is a signed token (app/dashboard/auth.py): valid on every replica without a
session store. Signing out records the token's sha256 until the token would have expired;
``signed_out`` is checked after the signature, on each dashboard request (one primary-key
read). Rows past their expiry are deleted whenever someone signs out.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from sqlalchemy import String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from registry.models import Base, UTCDateTime, insert_new


class DashboardSignout(Base):
    """A signed-out session token, by hash, kept until it would have expired."""

    __tablename__ = "dashboard_signouts"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def sign_out(session: Session, token: str, expires: int, now: datetime | None = None) -> None:
    """Record ``token`` as signed out until it expires (``expires``, Unix seconds); forget
    expired records."""
    now = now or datetime.now(UTC)
    session.execute(delete(DashboardSignout).where(DashboardSignout.expires_at < now))
    row = {"token_hash": token_hash(token), "expires_at": datetime.fromtimestamp(expires, UTC)}
    # ON CONFLICT DO NOTHING: the same cookie signed out on two replicas at once was a 500.
    session.execute(insert_new(session, DashboardSignout).values(**row))


def signed_out(session: Session, token: str) -> bool:
    query = select(DashboardSignout.token_hash).where(
        DashboardSignout.token_hash == token_hash(token)
    )
    return session.scalar(query) is not None
