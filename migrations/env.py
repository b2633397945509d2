"""Alembic environment: the URL comes from the caller (app.migrate) or from settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

import app.models  # noqa: F401  (registers every table on the shared metadata)
from app.db import make_engine
from app.settings import get_settings
from registry.models import Base, UTCDateTime

config = context.config
target_metadata = Base.metadata


def _render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    """Render our timestamp decorator as the plain column type it stands for."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _run(connection: Connection) -> None:
    context.configure(
        render_item=_render_item,
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.get_main_option("sqlalchemy.url") or get_settings().sqlalchemy_url
    engine = make_engine(url)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `toolreach migrate`")
run_migrations_online()
