"""One long-lived session per live MCP source, for calls and for its notifications.

A session is opened at the first call (or at start, to watch the server's
``notifications/tools/list_changed``) and kept: a stdio server is not started again per
call, an HTTP server not initialized again. Each session lives in a task of its own, which
enters and leaves the SDK's context managers (their cancel scopes must be left by the task
that entered them); calls use the session from any task.

One caller's call never ends another's: a call that ends (its caller's deadline, an error
answer) leaves the session as it was. A session that broke (its transport closed, an answer
it could not read) is dropped and the next call opens a new one. A session on which a call
ran out of the source's own time may be stuck: it is retired, so new calls open a new one,
and it is closed once the calls still in flight on it have ended.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, CallToolResult

from app.sources.mcp import Connected, Reach, connect
from app.sources.outbound import ResponseTooLarge
from app.sources.schemas import SourceConfig

log = logging.getLogger("toolreach.gateway")
LIST_CHANGED = "notifications/tools/list_changed"


def _method(message: Any) -> str | None:
    root = getattr(message, "root", message)  # a ServerNotification wraps the notification
    return getattr(root, "method", None)


class _Session:
    def __init__(self, config: SourceConfig, reach: Reach, on_changed: Callable[[], None]):
        self.config = config
        self.reach = reach
        self.on_changed = on_changed
        self.ready = anyio.Event()
        self.stop = anyio.Event()
        self.connected: Connected | None = None
        self.error: BaseException | None = None
        self.done = False
        self.task: asyncio.Task[None] | None = None
        # An answer the transport could not use (too large, not JSON-RPC): the SDK hands it
        # here, not to the call waiting for it, so the calls in flight are failed from here.
        self.broken = anyio.Event()
        self.failure: BaseException | None = None
        self.in_flight = 0
        self.retired = False

    async def _message(self, message: Any) -> None:
        if isinstance(message, ResponseTooLarge | ValueError):
            self.failure = message
            self.broken.set()
        elif _method(message) == LIST_CHANGED:
            self.on_changed()

    async def run(self) -> None:
        try:
            async with connect(self.config, self.reach, self._message) as connected:
                self.connected = connected
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:  # the server is gone, refused or broke: the next call retries
            self.error = exc
        finally:
            self.connected, self.done = None, True
            self.ready.set()


def closed(exc: BaseException) -> bool:
    """Whether a call failed because the session's transport is gone."""
    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | OSError)


def config_key(config: SourceConfig) -> str:
    text = json.dumps(config.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class McpPool:
    def __init__(self, reach: Reach, on_list_changed: Callable[[str], None]) -> None:
        self._reach = reach
        self._on_list_changed = on_list_changed
        self._sessions: dict[str, tuple[str, _Session]] = {}
        self._lock = anyio.Lock()
        self._closing: set[asyncio.Task[None]] = set()

    async def call(
        self, source: str, config: SourceConfig, tool: str, arguments: dict[str, Any]
    ) -> tuple[CallToolResult, list[str]]:
        """``tools/call`` on the source's session: the result and the secrets to mask. A
        broken answer fails the call at once (and drops the session) instead of leaving it
        to wait for its timeout."""
        held = await self._open(source, config)
        connected = held.connected
        if connected is None:
            raise ConnectionError("the MCP session closed")
        held.in_flight += 1
        try:
            return await self._call(source, held, connected, tool, arguments)
        finally:
            held.in_flight -= 1
            if held.retired and held.in_flight == 0:
                self._close_soon(held)

    async def _call(
        self,
        source: str,
        held: _Session,
        connected: Connected,
        tool: str,
        arguments: dict[str, Any],
    ) -> tuple[CallToolResult, list[str]]:
        result: list[CallToolResult] = []
        errors: list[Exception] = []

        async def run(scope: anyio.CancelScope) -> None:
            try:
                result.append(await connected.session.call_tool(tool, arguments))
            except Exception as exc:  # raised below, outside the task group (no group)
                errors.append(exc)
            finally:
                scope.cancel()

        async def watch(scope: anyio.CancelScope) -> None:
            await held.broken.wait()
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(run, group.cancel_scope)
            group.start_soon(watch, group.cancel_scope)
        if errors:
            if closed(errors[0]):
                await self._drop(source, held)  # its transport is gone, for every caller
                if held.error is not None and errors[0].__cause__ is None:
                    raise errors[0] from held.error  # why it went (the SDK does not say)
            raise errors[0]
        if not result:
            await self._drop(source, held)
            raise held.failure or ConnectionError("the MCP session broke")
        return result[0], connected.secrets

    async def session(self, source: str, config: SourceConfig) -> Connected:
        """The source's open session (opened now if there is none, or its config changed)."""
        held = await self._open(source, config)
        assert held.connected is not None
        return held.connected

    async def _open(self, source: str, config: SourceConfig) -> _Session:
        key = config_key(config)
        async with self._lock:
            held = self._sessions.get(source)
            if held is not None and (held[0] != key or held[1].done):
                await self._close(held[1])
                held = None
            if held is None:
                session = _Session(config, self._reach, lambda: self._on_list_changed(source))
                session.task = asyncio.get_running_loop().create_task(session.run())
                held = (key, session)
                self._sessions[source] = held
        session = held[1]
        with anyio.fail_after(self._reach.timeout):
            await session.ready.wait()
        if session.connected is None:
            self._sessions.pop(source, None)
            raise session.error or ConnectionError("the MCP session closed")
        return session

    async def drop(self, source: str) -> None:
        """Close the source's session (the source is gone)."""
        async with self._lock:
            held = self._sessions.pop(source, None)
            if held is not None:
                await self._close(held[1])

    async def _drop(self, source: str, session: _Session) -> None:
        """Close ``session``, which broke; a newer session of the source is left alone."""
        async with self._lock:
            held = self._sessions.get(source)
            if held is not None and held[1] is session:
                del self._sessions[source]
        await self._close(session)

    async def retire(self, source: str) -> None:
        """New calls to the source get a new session; the current one closes once the calls
        in flight on it have ended (a call ran out of time on it: it may be stuck)."""
        async with self._lock:
            held = self._sessions.pop(source, None)
        if held is not None:
            held[1].retired = True
            if held[1].in_flight == 0:
                self._close_soon(held[1])

    def _close_soon(self, session: _Session) -> None:
        task = asyncio.get_running_loop().create_task(self._close(session))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def watch(self, sources: dict[str, SourceConfig]) -> None:
        """Open a session to each source, to hear it when its tools change."""
        for name, config in sources.items():
            try:
                await self.session(name, config)
            except Exception as exc:
                log.warning("source %s: not watched: %s", name, type(exc).__name__)

    @staticmethod
    async def _close(session: _Session) -> None:
        session.stop.set()
        if session.task is not None:
            with anyio.move_on_after(10):
                await asyncio.gather(session.task, return_exceptions=True)

    async def aclose(self) -> None:
        async with self._lock:
            held = list(self._sessions.values())
            self._sessions.clear()
        for _, session in held:
            await self._close(session)
        await asyncio.gather(*self._closing, return_exceptions=True)
