"""Engines and sessions. `unit_of_work` is the one place that commits.

A sick database (frozen, partitioned, on a stuck disk, behind a pooler with no free server
connection) must not hang the service. On Postgres every wait is bounded (`DatabaseLimits`):

* connecting, by psycopg's ``connect_timeout``;
* a statement waiting on a lock, and any statement, by the server's ``lock_timeout`` and
  ``statement_timeout``, set in each transaction (no session state, so a transaction-mode
  PgBouncer may share the server connections);
* every wait for the server's answer (a statement, a fetch, a commit, a rollback), also on
  the client (`WatchedConnection`): a frozen server enforces none of its own timeouts and
  its kernel still acknowledges TCP, so no keepalive fires. Past the statement timeout plus
  the connect timeout the connection is closed; the pool then discards it;
* a pooled connection is pinged before use with the connect timeout as its deadline;
* waiting for a free connection, by the pool's timeout.

Each timeout is reported to the engine's `Gate` (app/db_health.py), which then refuses new
database work at once with `DatabaseUnavailable` (a 503) until the database answers again,
instead of letting every request wait out its own timeout.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

import psycopg
from psycopg import errors as pg_errors
from pydantic import Field
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import InvalidatePoolError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker


class DatabaseUnavailable(Exception):
    """Refused before touching the database: it stopped answering a moment ago."""


# The database cannot be used right now (down, restarting, refusing connections, not answering,
# the pool exhausted, SQLite locked past its busy timeout): the API answers 503
# (app/api/error_handlers.py).
DATABASE_TROUBLE = (OperationalError, PoolTimeout, DatabaseUnavailable)


@dataclass(frozen=True, slots=True)
class DatabaseLimits:
    """How long any database work may wait, and how many connections it may hold (Postgres).

    The settings' ``database`` group (TOOLREACH_DATABASE_POOL_SIZE and its kin, app/settings.py):
    the bounds are checked when the settings are read; a value built in code is taken as is.
    """

    # Seconds; psycopg counts whole seconds, at least 2.
    connect_timeout: Annotated[int, Field(ge=2, le=300)] = 3
    statement_timeout: Annotated[float, Field(ge=0.1, le=86_400)] = 10.0
    lock_timeout: Annotated[float, Field(ge=0.1, le=86_400)] = 5.0  # at most statement_timeout
    pool_timeout: Annotated[float, Field(gt=0, le=3600)] = 5.0
    pool_size: Annotated[int, Field(ge=1, le=1000)] = 5
    max_overflow: Annotated[int, Field(ge=0, le=1000)] = 10
    # psycopg prepares a statement after this many runs on a connection; None: never (for
    # PgBouncer in transaction mode before 1.22, docs/DEPLOY.md).
    prepare_threshold: Annotated[int | None, Field(ge=0, le=1_000_000)] = 5

    @property
    def answer_deadline(self) -> float:
        """The client's deadline for the server's answer: the server's own timeout, then the
        time a cancelled statement's error needs to arrive."""
        return self.statement_timeout + self.connect_timeout


class Gate(Protocol):
    """What an engine reports its timeouts to, and asks before starting new work."""

    def check(self) -> None: ...  # raises DatabaseUnavailable while the database is stalled

    def stalled(self, reason: str) -> None: ...


class NoAnswer(psycopg.OperationalError):
    """The server did not answer within the client's deadline; the connection is closed."""


def timed_out(exc: BaseException) -> bool:
    """A wait on the server ran out (not a refusal, which is fast)."""
    cause = getattr(exc, "orig", None) or exc
    return isinstance(cause, NoAnswer | pg_errors.ConnectionTimeout)


class WatchedConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every wait for the server has a deadline.

    psycopg sends a query and then waits for the socket in ``wait``, the one place every
    statement, fetch, commit and rollback passes; past ``deadline`` seconds it gives up, and
    the connection, stopped in the middle of the protocol, is closed.
    """

    deadline: float = 60.0
    gate: Gate | None = None

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        limit = self.deadline if timeout is None else timeout
        try:
            return super().wait(gen, interval, limit)
        except pg_errors._WaitTimeout:
            self.pgconn.finish()
            reason = f"no answer from the database within {limit:g} s"
            if self.gate is not None:
                self.gate.stalled(reason)
            raise NoAnswer(f"{reason}; connection closed") from None

    @contextmanager
    def deadline_of(self, seconds: float) -> Iterator[None]:
        before, self.deadline = self.deadline, seconds
        try:
            yield
        finally:
            self.deadline = before


def connect_watched(
    limits: DatabaseLimits, gate: Gate | None, *args: Any, **kwargs: Any
) -> WatchedConnection:
    """A new connection (psycopg's own connect timeout), watched with the limits' deadline."""
    try:
        connection = WatchedConnection.connect(*args, **kwargs)
    except pg_errors.ConnectionTimeout:
        if gate is not None:
            gate.stalled(f"no connection within {limits.connect_timeout} s")
        raise
    connection.deadline, connection.gate = limits.answer_deadline, gate
    return connection


def make_engine(url: str, limits: DatabaseLimits | None = None, gate: Gate | None = None) -> Engine:
    """An engine for Postgres (psycopg 3) or a SQLite file, tuned for a small service.

    Without ``limits`` (migrations, scripts) a Postgres engine has no timeouts: a migration
    may wait on a lock or build an index for as long as it needs.
    """
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if limits is None:
        return create_engine(url, pool_pre_ping=True)
    engine = create_engine(
        url,
        pool_size=limits.pool_size,
        max_overflow=limits.max_overflow,
        pool_timeout=limits.pool_timeout,
        connect_args={
            "connect_timeout": limits.connect_timeout,
            "prepare_threshold": limits.prepare_threshold,
        },
    )
    _bound(engine, limits, gate)
    return engine


def _bound(engine: Engine, limits: DatabaseLimits, gate: Gate | None) -> None:
    """Watch every connection, ping pooled ones before use, time out every transaction."""
    settings = (
        f"SELECT set_config('statement_timeout', '{round(limits.statement_timeout * 1000)}', "
        f"true), set_config('lock_timeout', '{round(limits.lock_timeout * 1000)}', true)"
    )

    @event.listens_for(engine, "do_connect")
    def connect(_dialect: Any, record: Any, cargs: Any, cparams: Any) -> WatchedConnection:
        if gate is not None:
            gate.check()
        record.info["fresh"] = True
        return connect_watched(limits, gate, *cargs, **cparams)

    @event.listens_for(engine, "checkout")
    def ping(connection: WatchedConnection, record: Any, _proxy: Any) -> None:
        """Like ``pool_pre_ping``, but a frozen server cannot hold it past the connect timeout."""
        if record.info.pop("fresh", False):
            return
        if gate is not None:
            gate.check()
        try:
            with connection.deadline_of(limits.connect_timeout), connection.cursor() as cursor:
                cursor.execute(";")
        except psycopg.Error as exc:
            raise InvalidatePoolError(str(exc)) from exc

    @event.listens_for(engine, "begin")
    def time_out(connection: Any) -> None:
        """The server's timeouts, for this transaction only; as trivial as the ping, so with
        its deadline (behind PgBouncer a fresh connection is never pinged: the pooler
        answers the connect itself, whatever the server's state)."""
        with connection.connection.dbapi_connection.deadline_of(limits.connect_timeout):
            connection.exec_driver_sql(settings)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


# What opens a unit of work: one per process, built with its engine.
SessionFactory = sessionmaker[Session]


def make_session_factory(engine: Engine) -> SessionFactory:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def unit_of_work(factory: SessionFactory) -> Iterator[Session]:
    """A session that commits if the block succeeds and rolls back if it raises."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


class PostgresProbe:
    """An empty statement on a connection of its own (never the pool's), in autocommit,
    unprepared, with the connect timeout as its deadline."""

    def __init__(self, engine: Engine, limits: DatabaseLimits) -> None:
        args, params = engine.dialect.create_connect_args(engine.url)
        self._args, self._limits = args, limits
        self._params = {
            **params,
            "connect_timeout": limits.connect_timeout,
            "autocommit": True,
            "prepare_threshold": None,
        }
        self._connection: WatchedConnection | None = None

    def __call__(self) -> None:
        if self._connection is not None:
            try:
                return self._ask(self._connection)
            except psycopg.Error as exc:
                self.close()
                if timed_out(exc):
                    raise
        # The first connection, or a new one after the last broke (a restart, a terminated
        # backend): one lost connection is not an outage.
        self._connection = connect_watched(self._limits, None, *self._args, **self._params)
        self._ask(self._connection)

    def _ask(self, connection: WatchedConnection) -> None:
        with connection.deadline_of(self._limits.connect_timeout):
            connection.execute(b";")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class EngineProbe:
    """``SELECT 1`` through the engine: for SQLite, a file that never stops answering."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __call__(self) -> None:
        with self._engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def close(self) -> None:
        pass


def make_probe(engine: Engine, limits: DatabaseLimits) -> PostgresProbe | EngineProbe:
    """How app/db_health.py asks this engine's database whether it answers."""
    if engine.dialect.name == "postgresql":
        return PostgresProbe(engine, limits)
    return EngineProbe(engine)
