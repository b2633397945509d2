"""Tables of the feedback loop: route events, their candidates, and the agents' feedback.

``route_events`` and ``route_candidates`` are written only by the background event writer.
``feedback`` has no foreign key to ``route_events`` on purpose: an agent may report on a route
whose event is still in the writer's buffer (the batch has not landed yet), so the feedback
row can exist a moment before its event. It carries the route's namespace and the rank of the
chosen tool, fixed when it is written, so statistics and the usage prior need no JSON parsing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from registry.models import Base, UTCDateTime, utcnow

ROUTE_ID_LENGTH = 64


class RouteEvent(Base):
    """One answer of ``POST /v1/route``: what was asked, what was offered, how fast."""

    __tablename__ = "route_events"
    __table_args__ = (Index("ix_route_events_namespace_created_at", "namespace", "created_at"),)

    id: Mapped[str] = mapped_column(String(ROUTE_ID_LENGTH), primary_key=True)  # the route_id
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    namespace: Mapped[str] = mapped_column(String(64))
    # The step's text, or "sha256:<hex>" of it when TOOLREACH_HASH_QUERIES is on.
    query: Mapped[str] = mapped_column(Text)
    k: Mapped[int] = mapped_column(Integer)
    latency_ms: Mapped[float] = mapped_column(Float)
    model: Mapped[str] = mapped_column(String(128))
    weights: Mapped[dict[str, Any]] = mapped_column(JSON)  # the router config in force
    # The key that asked (None: before 0010, or no key): a report without a key of its own
    # (the gateway's, a validated call) is this key's evidence (app/loop/trust.py).
    key_id: Mapped[str | None] = mapped_column(String(32), default=None)


class RouteEventCandidate(Base):
    """One tool offered by a route, at its rank (1 = first), with its score and stages
    (as stored; the API's answer shows it as ``app.schemas.RouteCandidate``)."""

    __tablename__ = "route_candidates"
    __table_args__ = (Index("ix_route_candidates_name", "name"),)

    route_id: Mapped[str] = mapped_column(
        ForeignKey("route_events.id", ondelete="CASCADE"), primary_key=True
    )
    rank: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    score: Mapped[float] = mapped_column(Float)
    stages: Mapped[dict[str, Any]] = mapped_column(JSON)


class Feedback(Base):
    """What the agent really called after a route, and how it went; one row per route."""

    __tablename__ = "feedback"
    __table_args__ = (Index("ix_feedback_namespace_created_at", "namespace", "created_at"),)

    route_id: Mapped[str] = mapped_column(String(ROUTE_ID_LENGTH), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(64))
    chosen: Mapped[str | None] = mapped_column(String(128), default=None)  # None: none fit
    # Position of `chosen` among the route's candidates (1 = first); None if not offered.
    rank: Mapped[int | None] = mapped_column(Integer, default=None)
    outcome: Mapped[str] = mapped_column(String(16))  # success | error | unknown
    error_code: Mapped[str | None] = mapped_column(String(128), default=None)
    from_validate: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # The key that reported it (None: before 0008, or the gateway and validated calls,
    # whose key is then the route's): app/loop/trust.py weighs each key's evidence.
    key_id: Mapped[str | None] = mapped_column(String(32), default=None)


class MemoryForget(Base):
    """An admin's "forget": one remembered step (``route_id`` set: the reports of that
    step's text for that tool), or every step of a tool reported before ``created_at``."""

    __tablename__ = "memory_forgets"
    __table_args__ = (Index("ix_memory_forgets_namespace", "namespace"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(64))
    tool: Mapped[str] = mapped_column(String(128))
    text_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
