"""Every key the service knows, in memory: the environment's and the table's.

A request's key is found by its SHA-256 digest in a dict, so checking a key never waits on
the database. The table's keys (``/v1/keys``) are reloaded whole by a background thread every
``refresh_seconds`` (``TOOLREACH_KEY_REFRESH_SECONDS``, 2 s) and at once after a write on
this replica; the new table is swapped in whole. A key made or revoked on one replica thus
works, or stops working, on every replica within one interval plus one reload. Each interval
asks first whether anything changed (``table_mark``: one aggregate, far cheaper than a
reload) and reloads only then, or every ``FULL_RELOAD_SECONDS`` whatever it says (a hand
edit of the table) (bench/perf/key_refresh.py; docs/API.md, "Keys").
A key that is in no table is refused from memory, never looked up: a stream of made-up keys
costs the database nothing, at the price of a new key being refused by the other replicas
for up to one interval.

Why SHA-256 and no slow KDF (bcrypt, scrypt, Argon2): a slow hash makes guessing a *human*
password costly. A key made here is 32 random bytes (256 bits); no number of guesses finds
one, nor a SHA-256 preimage, so slowing each guess gains nothing, while a salted slow hash
would cost every request tens of milliseconds and rule out the lookup by digest.

Why a lookup by digest leaks nothing by its timing: the time depends on the digest of the
key presented, which a caller cannot steer towards a stored digest without preimages; and
knowing how a stored digest begins brings no one closer to its key.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Literal

from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.errors import Unauthorized
from app.keys import repository
from app.keys.scope import Caller
from app.settings import Settings, parse_key_entry

log = logging.getLogger("toolreach.keys")

KeyRole = Literal["admin", "agent", "dashboard"]
ROLES: tuple[KeyRole, ...] = ("admin", "agent", "dashboard")
# A key's last use is written at most once a minute per replica: never a write per request.
LAST_USED_RESOLUTION_SECONDS = 60.0
ENVIRONMENT_PREFIX = "env-"  # the ids of the environment's keys; the table's are hex
# The table is reloaded whole at least this often, changed or not: the mark of ``refresh``
# sees every key the API makes or revokes, not a row edited or deleted by hand.
FULL_RELOAD_SECONDS = 60.0


def digest(secret: str) -> str:
    """What a key is stored and looked up by: the hex SHA-256 of its text."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """One key the service knows, without its secret."""

    id: str
    role: KeyRole
    namespaces: frozenset[str] | None  # None: every namespace
    digest: str
    from_environment: bool = False

    def caller(self) -> Caller:
        return Caller(self.role, self.namespaces, self.id)


def environment_keys(settings: Settings) -> list[KeyRecord]:
    """The keys of TOOLREACH_ADMIN_KEYS, _AGENT_KEYS and _DASHBOARD_KEYS (KEY or KEY@NS|NS)."""
    lists: dict[KeyRole, tuple[str, ...]] = {
        "admin": settings.admin_keys,
        "agent": settings.agent_keys,
        "dashboard": settings.dashboard_keys,
    }
    records = []
    for role, entries in lists.items():
        for entry in entries:
            secret, namespaces = parse_key_entry(entry)
            hashed = digest(secret)
            records.append(
                KeyRecord(f"{ENVIRONMENT_PREFIX}{hashed[:12]}", role, namespaces, hashed, True)
            )
    return records


@dataclass(frozen=True)
class KeyTable:
    """One immutable generation of the keys: swapped whole, never edited."""

    by_digest: Mapping[str, KeyRecord]
    by_id: Mapping[str, KeyRecord]
    # The agent endpoints need no key while no key could tell callers apart: no agent key
    # and no scoped key of any role (a scoped key would mean nothing if no key saw all).
    open_to_anonymous: bool

    @classmethod
    def of(cls, records: Iterable[KeyRecord]) -> KeyTable:
        records = list(records)
        return cls(
            by_digest=MappingProxyType({r.digest: r for r in records}),
            by_id=MappingProxyType({r.id: r for r in records}),
            open_to_anonymous=not any(r.role == "agent" or r.namespaces for r in records),
        )


def table_record(key_id: str, key_hash: str, role: str, namespaces: list[str] | None) -> KeyRecord:
    if role not in ROLES:
        raise ValueError(f"key {key_id}: unknown role {role!r}")
    scope = frozenset(namespaces) if namespaces is not None else None
    return KeyRecord(key_id, role, scope, key_hash)


class KeyStore:
    """The keys in memory; ``resolve`` reads them, ``refresh`` reloads the table's."""

    def __init__(
        self,
        environment: Sequence[KeyRecord] = (),
        factory: sessionmaker[Session] | None = None,
    ) -> None:
        self._environment = list(environment)
        self._factory = factory
        self._table = KeyTable.of(self._environment)
        self._noted: dict[str, float] = {}  # key id → monotonic time its use was last noted
        self._used: dict[str, datetime] = {}  # noted uses not yet written
        self._used_lock = threading.Lock()
        # One refresh at a time: a background one that read the table before a key was
        # revoked here must not swap its keys in after the refresh that follows the revocation.
        self._refresh_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        self._mark: repository.TableMark | None = None  # of the table last loaded
        self._reloaded_at = time.monotonic()
        self.loaded_at = time.monotonic()  # when the keys were last known current

    @classmethod
    def from_settings(
        cls, settings: Settings, factory: sessionmaker[Session] | None = None
    ) -> KeyStore:
        return cls(environment_keys(settings), factory)

    def resolve(self, secret: str) -> KeyRecord | None:
        """The key whose text is ``secret``, or None; a table key's use is noted."""
        record = self._table.by_digest.get(digest(secret))
        if record is not None and not record.from_environment:
            self._note_use(record.id)
        return record

    def caller(self, secret: str) -> Caller:
        """The caller a bearer key stands for; Unauthorized for a key no one knows."""
        record = self.resolve(secret)
        if record is None:
            raise Unauthorized("unknown API key")
        return record.caller()

    def by_id(self, key_id: str) -> KeyRecord | None:
        return self._table.by_id.get(key_id)

    @property
    def open_to_anonymous(self) -> bool:
        return self._table.open_to_anonymous

    def _note_use(self, key_id: str) -> None:
        now = time.monotonic()
        if now - self._noted.get(key_id, -LAST_USED_RESOLUTION_SECONDS) >= (
            LAST_USED_RESOLUTION_SECONDS
        ):
            with self._used_lock:  # not lost to the swap in refresh()
                self._noted[key_id] = now
                self._used[key_id] = datetime.now(UTC)

    def refresh(self) -> None:
        """Reload the table's keys if they changed (or are due) and swap them in; then write
        the uses noted since."""
        if self._factory is None:
            return
        with self._refresh_lock:
            self._reload_if_changed(self._factory)
        with self._used_lock:
            used, self._used = self._used, {}
        if used:
            with unit_of_work(self._factory) as session:
                repository.record_last_used(session, used)

    def _reload_if_changed(self, factory: sessionmaker[Session]) -> None:
        now = time.monotonic()
        with unit_of_work(factory) as session:
            mark = repository.table_mark(session)
            due = mark != self._mark or now - self._reloaded_at >= FULL_RELOAD_SECONDS
            rows = repository.active_keys(session) if due else None
        if rows is not None:
            self._table = KeyTable.of([*self._environment, *self._records(rows)])
            self._mark, self._reloaded_at = mark, now
        self.loaded_at = now

    @staticmethod
    def _records(rows: Iterable[repository.ActiveKey]) -> list[KeyRecord]:
        records = []
        for row in rows:
            try:
                records.append(table_record(*row))
            except ValueError as exc:  # a row no code of ours writes: skip it, say so
                log.warning("%s", exc)
        return records

    def _refresh_quietly(self) -> None:
        """One refresh; a failure keeps the keys loaded last, said once per outage."""
        try:
            self.refresh()
        except Exception as exc:
            if not self._failing:
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                log.warning("key table refresh failed (%s); keeping the keys loaded", reason)
            self._failing = True
        else:
            if self._failing:
                log.info("key table refresh works again")
            self._failing = False

    def start(self, interval: float) -> None:
        """Refresh every ``interval`` seconds in a background thread (the first load is the
        caller's, before serving)."""

        def loop() -> None:
            while not self._stop.wait(interval):
                self._refresh_quietly()

        self._thread = threading.Thread(target=loop, name="key-table", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
