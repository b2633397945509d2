"""Truncating timestamps to the hour or the day in SQL, the same on Postgres and SQLite."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import func, literal_column
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

Unit = Literal["hour", "day"]
_SQLITE_FORMATS = {"hour": "'%Y-%m-%d %H:00:00'", "day": "'%Y-%m-%d 00:00:00'"}


def bucket_start(session: Session, column: Any, unit: str) -> ColumnElement[Any]:
    """The start of the UTC hour or day `column` falls in.

    The unit is rendered as an SQL literal, not a bound parameter, so that the expression in
    SELECT and in GROUP BY is the same text (Postgres refuses two differently bound copies).
    """
    sqlite_format = _SQLITE_FORMATS[unit]  # KeyError for anything but hour or day
    if session.get_bind().dialect.name == "postgresql":
        utc = func.timezone(literal_column("'UTC'"), column)
        return func.date_trunc(literal_column(f"'{unit}'"), utc)
    return func.strftime(literal_column(sqlite_format), column)


def as_utc(value: datetime | str) -> datetime:
    """A bucket start as an aware UTC datetime, whichever form the database returned."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
