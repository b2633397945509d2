"""Tables of the sources: where tools live (an OpenAPI document, a live MCP server) and, per
tool read from one, how the gateway calls it (its binding).

No secret is ever stored here: a source's credentials are *references* (an environment
variable's name, a file's path) resolved at call time (app/gateway/secrets.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from registry.models import Base, UTCDateTime, utcnow


class Source(Base):
    """A registered source: read once, re-synced on demand, on a schedule, or when told."""

    __tablename__ = "sources"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    namespace: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))  # openapi | mcp
    # A URL or a file path (OpenAPI), a URL (MCP over streamable HTTP); None for MCP stdio.
    location: Mapped[str | None] = mapped_column(Text, default=None)
    # Everything else of the source's definition (app/sources/schemas.py SourceConfig):
    # the stdio command, base URL, credential references, name prefix...
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    # sha256 of what the last successful sync read (cards and bindings): the same again
    # changes nothing.
    content_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    # When a replica took the scheduled sync (so two replicas do not both run it).
    sync_claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    # The last sync's report: counts, refusals and the document's problems.
    last_report: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class SourceTool(Base):
    """One tool read from a source: its card's name and how to call it upstream."""

    __tablename__ = "source_tools"
    __table_args__ = (UniqueConstraint("source_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))  # the card's name in the source's namespace
    binding: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Set when the source stopped listing the tool: its card is retired (not routed, its
    # versions readable); cleared if it comes back.
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
