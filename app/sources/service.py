"""Sources, as the API, the command line and the gateway use them: register (read at once;
nothing stored if it cannot be read), list, read, sync (on demand, on a schedule, when an
MCP server says its tools changed), remove (its tools retired)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any, Protocol

import anyio
from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.embedding.encoders import Encoder
from app.settings import Settings
from app.sources import repository
from app.sources.documents import DocumentLimits
from app.sources.fetch import Snapshot, SourceFailed, SourceSpec, fetch
from app.sources.mcp import Reach
from app.sources.models import Source
from app.sources.outbound import OutboundRefused, OutboundRules
from app.sources.schemas import (
    SourceConfig,
    SourceCreate,
    SourceKind,
    SourceList,
    SourceRead,
    SyncReport,
)
from app.sources.secrets import SecretMissing, check_file_ref, keep_secrets_out_of_logs
from app.sources.sync import apply_snapshot, retire_tools
from registry.errors import Conflict, InvalidInput, NotFound
from registry.models import utcnow

log = logging.getLogger("toolreach.sources")
DEBOUNCE_SECONDS = 0.2  # list_changed notifications close together: one sync


def spec_of(source: Source) -> SourceSpec:
    config = SourceConfig.model_validate(source.config)
    kind: SourceKind = "mcp" if source.kind == "mcp" else "openapi"
    return SourceSpec(source.name, source.namespace, kind, config)


def to_read(session: Session, source: Source) -> SourceRead:
    live, retired = repository.tool_counts(session, source.id)
    return SourceRead(
        id=source.id,
        name=source.name,
        namespace=source.namespace,
        kind="mcp" if source.kind == "mcp" else "openapi",
        config=source.config,
        tools=live,
        retired=retired,
        content_hash=source.content_hash,
        synced_at=source.synced_at,
        last_error=source.last_error,
        last_report=source.last_report,
        created_at=source.created_at,
        updated_at=source.updated_at,
    )


class Watcher(Protocol):
    async def watch(self, sources: dict[str, SourceConfig]) -> None: ...


class SourceService:
    def __init__(
        self,
        settings: Settings,
        factory: sessionmaker[Session],
        encoder: Encoder,
        on_registry_change: Callable[[], object],
    ) -> None:
        self.settings = settings
        self.reach = Reach(
            OutboundRules.from_settings(settings),
            settings.secret_dirs,
            settings.gateway.timeout_seconds,
            settings.source.stdio_allowed,
            max_tools=settings.source.max_tools,
            max_listing_bytes=settings.source.max_listing_bytes,
        )
        keep_secrets_out_of_logs()
        self.document_limits = DocumentLimits.from_settings(settings)
        self._factory = factory
        self.factory = factory
        self._encoder = encoder
        self._changed = on_registry_change
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._asked: set[str] = set()  # sources with an asked-for sync waiting
        self._asked_at: dict[str, float] = {}  # when each source's last asked-for sync began

    # Reads: plain functions on the caller's session.

    def get(self, session: Session, name: str) -> Source:
        source = repository.get(session, name)
        if source is None:
            raise NotFound(f"no source {name!r}")
        return source

    def read(self, session: Session, name: str) -> SourceRead:
        return to_read(session, self.get(session, name))

    def list_sources(self, session: Session, namespace: str | None = None) -> SourceList:
        items = [to_read(session, s) for s in repository.list_sources(session, namespace)]
        return SourceList(items=items, total=len(items))

    # Writes: each in its own unit of work; the index catches up after it.

    def check(self, create: SourceCreate) -> None:
        """What can be refused before anything is read."""
        if create.command is not None and not self.settings.source.stdio_allowed:
            raise InvalidInput(
                "MCP sources run as local commands are off (TOOLREACH_SOURCE_STDIO_ALLOWED)"
            )
        for ref in create.config().secrets():
            try:
                check_file_ref(ref, self.settings.secret_dirs)
            except SecretMissing as exc:
                raise InvalidInput(str(exc)) from None

    async def register(self, create: SourceCreate) -> SyncReport:
        """Read the source and store it with its tools, in one transaction."""
        self.check(create)
        if await anyio.to_thread.run_sync(self._exists, create.name):
            raise Conflict(f"a source named {create.name!r} exists; sync or remove it")
        spec = SourceSpec(create.name, create.namespace, create.kind, create.config())
        started = time.perf_counter()
        snapshot = await fetch(spec, self.reach, self.document_limits)
        return await anyio.to_thread.run_sync(self._store_new, spec, snapshot, started)

    def _exists(self, name: str) -> bool:
        with unit_of_work(self._factory) as session:
            return repository.get(session, name) is not None

    def _store_new(self, spec: SourceSpec, snapshot: Snapshot, started: float) -> SyncReport:
        with unit_of_work(self._factory) as session:
            if repository.get(session, spec.name) is not None:
                raise Conflict(f"a source named {spec.name!r} exists; sync or remove it")
            location = spec.config.url or spec.config.path
            source = repository.add(
                session,
                Source(
                    name=spec.name,
                    namespace=spec.namespace,
                    kind=spec.kind,
                    location=location,
                    config=spec.config.model_dump(mode="json", exclude_defaults=True),
                ),
            )
            report = apply_snapshot(session, self._encoder, source, snapshot, started=started)
        self._changed()
        return report

    async def sync(self, name: str, *, force: bool = False) -> SyncReport:
        """Read the source again and apply what changed; SourceFailed leaves all as it was
        (the failure is kept on the source: GET shows it)."""
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            spec = await anyio.to_thread.run_sync(self._spec, name)
            started = time.perf_counter()
            try:
                snapshot = await fetch(spec, self.reach, self.document_limits)
            except SourceFailed as exc:
                await anyio.to_thread.run_sync(self._failed, name, exc.message)
                raise
            return await anyio.to_thread.run_sync(self._apply, name, snapshot, started, force)

    def _spec(self, name: str) -> SourceSpec:
        with unit_of_work(self._factory) as session:
            return spec_of(self.get(session, name))

    def _failed(self, name: str, message: str) -> None:
        with unit_of_work(self._factory) as session:
            source = repository.get(session, name)
            if source is not None:
                source.last_error, source.updated_at = message[:4000], utcnow()

    def _apply(self, name: str, snapshot: Snapshot, started: float, force: bool) -> SyncReport:
        with unit_of_work(self._factory) as session:
            source = self.get(session, name)
            report = apply_snapshot(
                session, self._encoder, source, snapshot, started=started, force=force
            )
        if report.status == "synced":
            self._changed()
        return report

    def remove(self, name: str) -> list[str]:
        """Forget the source; its tools are retired (their history stays readable)."""
        with unit_of_work(self._factory) as session:
            source = self.get(session, name)
            live = [row for row in repository.tools(session, source.id) if row.retired_at is None]
            retire_tools(session, source, live)
            repository.delete(session, source)
        self._changed()
        return [row.name for row in live]

    # In the background: the schedule and the servers' notifications.

    def request_sync(self, name: str) -> None:
        """Sync soon (an MCP server said its tools changed). Asks close together make one
        sync, and asked-for syncs of a source begin at least
        ``TOOLREACH_SOURCE_RESYNC_MIN_SECONDS`` apart: an ask while one waits is part of it,
        an ask while one runs makes one more after it. Call it on the event loop."""
        if name in self._asked:
            return
        self._asked.add(name)
        self._spawn(self._sync_when_asked(name))

    async def _sync_when_asked(self, name: str) -> None:
        last = self._asked_at.get(name)
        due = DEBOUNCE_SECONDS
        if last is not None:
            due = max(due, last + self.settings.source.resync_min_seconds - time.monotonic())
        await anyio.sleep(due)
        self._asked.discard(name)  # an ask from now on is for the next sync
        self._asked_at[name] = time.monotonic()
        await self._quietly(name)

    async def _quietly(self, name: str) -> None:
        try:
            report = await self.sync(name)
            log.info("source %s synced: %s, %d tools", name, report.status, report.tools)
        except (SourceFailed, NotFound, OutboundRefused) as exc:
            log.warning("source %s not synced: %s", name, getattr(exc, "message", exc))
        except Exception:
            log.exception("source %s: sync failed", name)

    def start(self) -> None:
        """Start the schedule (on the running event loop), if one is set."""
        if self.settings.source.sync_seconds > 0:
            self._spawn(self._schedule(self.settings.source.sync_seconds))

    def watch(self, pool: Watcher) -> None:
        """Have ``pool`` hold a session to each live MCP source (in the background)."""
        self._spawn(self._watch(pool))

    async def _watch(self, pool: Watcher) -> None:
        try:
            configs = await anyio.to_thread.run_sync(self._mcp_configs)
        except Exception:
            log.exception("MCP sources not watched: their list could not be read")
            return
        await pool.watch(configs)

    def _mcp_configs(self) -> dict[str, SourceConfig]:
        with unit_of_work(self._factory) as session:
            return {
                s.name: SourceConfig.model_validate(s.config)
                for s in repository.list_sources(session)
                if s.kind == "mcp"
            }

    async def _schedule(self, every: float) -> None:
        while True:
            await anyio.sleep(min(every, 60.0))
            try:
                for name in await anyio.to_thread.run_sync(self._claim_due, every):
                    await self._quietly(name)
            except Exception:  # the database is down: try again at the next tick
                log.exception("scheduled source syncs failed")

    def _claim_due(self, every: float) -> list[str]:
        period = timedelta(seconds=every)
        with unit_of_work(self._factory) as session:
            ids = repository.due_ids(session, period)
            claimed = [i for i in ids if repository.claim_due(session, i, period)]
            return [s.name for s in repository.list_sources(session) if s.id in claimed]

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
