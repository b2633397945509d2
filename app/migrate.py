"""Schema migrations, run as an explicit step (`toolreach migrate`), never on import."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

_ROOT = Path(__file__).resolve().parent.parent


def alembic_config(url: str) -> Config:
    """An Alembic config for `url`, found beside the package or in the working directory."""
    here = _ROOT if (_ROOT / "alembic.ini").exists() else Path.cwd()
    config = Config(str(here / "alembic.ini"))
    config.set_main_option("script_location", str(here / "migrations"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def check(url: str) -> None:
    """Raise if the models and the migrations disagree."""
    command.check(alembic_config(url))


class NotMigrated(RuntimeError):
    """The database schema is not at the head revision."""


def ensure_current(engine_url: str) -> None:
    """Refuse to start on a database whose schema is behind (or ahead of) this code."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from app.db import make_engine

    head = ScriptDirectory.from_config(alembic_config(engine_url)).get_current_head()
    engine = make_engine(engine_url)
    try:
        with engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
    if current != head:
        raise NotMigrated(
            f"the database schema is at {current or 'nothing'}, this code needs {head}: "
            "run `toolreach migrate` first"
        )
