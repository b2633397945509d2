"""The ``api_keys`` table: keys made through ``/v1/keys``, each stored as a SHA-256 digest.

The secret itself is never stored, so it can never be read back: the answer that creates a
key is the only place it appears. Revoking sets ``revoked_at`` (the row stays, for the
record); every replica drops a revoked key at its next refresh (app/keys/store.py).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from registry.models import Base, UTCDateTime


class ApiKey(Base):
    """One key: its role, its scope (null: every namespace), a label, when made and used."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    # sha256(secret) in hex: what a request's key is looked up by.
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    namespaces: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
