"""The ``rate_counts`` table: each replica's count per (kind, subject, window).

Each replica adds its new events to its own row every flush (an upsert that increments), and
reads the other replicas' rows of the windows still open. Subjects are client addresses
and key ids (app/keys), never a key's text. Rows of closed windows are deleted.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from registry.models import Base

SUBJECT_LENGTH = 64  # an IPv6 /64 written out, a key id, or the first 64 characters of a peer


class RateCount(Base):
    """Events one replica counted for one subject in one window."""

    __tablename__ = "rate_counts"

    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    subject: Mapped[str] = mapped_column(String(SUBJECT_LENGTH), primary_key=True)
    # Unix seconds at which the window starts (a multiple of its length).
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True, index=True)
    replica: Mapped[str] = mapped_column(String(32), primary_key=True)
    count: Mapped[int] = mapped_column(Integer)
