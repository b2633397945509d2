"""SQLAlchemy tables of the registry. Alembic migrations are the only way they change."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def insert_new(session: Session, model: type[Base]) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING into ``model``'s table, in the session's dialect
    (PostgreSQL or SQLite): for rows two writers may add at the same moment, where the one
    already there is as good as this one."""
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    return insert(model).on_conflict_do_nothing()


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp everywhere; SQLite hands back naive ones, read as UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON}


class Tool(Base):
    """A tool's identity in a namespace and a pointer to its current version."""

    __tablename__ = "tools"
    __table_args__ = (UniqueConstraint("namespace", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace: Mapped[str] = mapped_column(String(64), index=True)
    name: Mapped[str] = mapped_column(String(128))
    current_version: Mapped[int] = mapped_column(Integer)
    # Denormalised from the current card for listing filters (tags as "|a|b|").
    summary: Mapped[str] = mapped_column(String(300), default="")
    tags: Mapped[str] = mapped_column(Text, default="")
    # The registry revision of the last change to this tool; replicas sync by it.
    revision: Mapped[int] = mapped_column(Integer, index=True)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    versions: Mapped[list[ToolVersion]] = relationship(
        back_populates="tool", order_by="ToolVersion.version"
    )


class ToolVersion(Base):
    """One immutable version of a tool card; every change adds one."""

    __tablename__ = "tool_versions"
    __table_args__ = (UniqueConstraint("tool_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tool_id: Mapped[int] = mapped_column(ForeignKey("tools.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    card: Mapped[dict[str, Any]] = mapped_column(JSON)
    content_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    tool: Mapped[Tool] = relationship(back_populates="versions")


class Embedding(Base):
    """A stored text embedding, keyed by model and a hash of the embedded text."""

    __tablename__ = "embeddings"

    model: Mapped[str] = mapped_column(String(128), primary_key=True)
    text_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    dim: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class RegistryState(Base):
    """One row: the registry revision, bumped in the transaction of every tool write."""

    __tablename__ = "registry_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, default=0)
