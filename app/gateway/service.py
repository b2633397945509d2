"""The gateway: a call by name is validated, forwarded to the tool's source, and answered with
the tool's result or a structured error (code, message, retryable, the card's suggestion).

One call, in order:

1. the tool is looked up in the live index (an unknown name: ``unknown_tool`` with the
   closest real names); the arguments are checked against its schema
   (``invalid_arguments`` with the exact problems);
2. its source and binding are read (a tool without a source, or whose stored binding cannot
   be read: ``not_callable``);
3. the source's circuit breaker and in-flight limit are passed (``circuit_open``,
   ``overloaded``; app/gateway/forward.py);
4. it is sent (an HTTP request, or MCP ``tools/call`` on the source's session), within the
   call's timeout; a call safe to repeat (GET, HEAD, OPTIONS; an MCP tool annotated
   ``readOnlyHint`` or ``idempotentHint``) is retried on a retryable failure;
5. with a ``route_id`` it is recorded as that route's report (app/loop/feedback.py), so
   ``/v1/stats`` and the dashboard count it without a feedback request.

Credentials are read at step 4 and masked out of every answer and every message. A call
never raises: whatever goes wrong, even a bug of ours, is its own structured answer (so a
batch answers every other call).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from sqlalchemy.orm import Session, sessionmaker

from app.db import DATABASE_TROUBLE, unit_of_work
from app.gateway import http_call, mcp_call
from app.gateway.failures import (
    INLINE_BYTES,
    MESSAGE_CHARS,
    CallFailed,
    error_of,
    reason,
    unreachable,
)
from app.gateway.forward import Deadline, forward
from app.gateway.limits import Limits
from app.gateway.mcp_pool import McpPool
from app.gateway.schemas import CallRequest, CallResult
from app.loop.events import EventWriter
from app.loop.feedback import record_call
from app.metrics import Metrics
from app.schemas import Outcome
from app.settings import Settings
from app.sources import repository as sources
from app.sources.binding import Binding, BindingUnreadable, HttpBinding, McpBinding, parse
from app.sources.causes import unreached
from app.sources.headers import header_problem
from app.sources.masking import mask
from app.sources.mcp import Reach
from app.sources.outbound import OutboundRefused, ResponseTooLarge, http_client
from app.sources.schemas import SourceConfig
from app.sources.secrets import SecretMissing, resolve_all, secret_values
from app.tools.live_index import IndexManager
from registry.calls import did_you_mean, validate_arguments
from registry.card import ToolCard

log = logging.getLogger("toolreach.gateway")


@dataclass(frozen=True)
class Target:
    """Where a call goes: the source's name and config, and the tool's binding."""

    source: str
    config: SourceConfig
    binding: Binding


class Gateway:
    def __init__(
        self,
        settings: Settings,
        factory: sessionmaker[Session],
        index: IndexManager,
        events: EventWriter,
        metrics: Metrics,
        reach: Reach,
        on_list_changed: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self._factory = factory
        self._index = index
        self._events = events
        self._metrics = metrics
        self._reach = reach
        self.pool = McpPool(reach, on_list_changed)
        self._limits = Limits(
            settings.gateway.source_concurrency,
            settings.gateway.breaker_failures,
            settings.gateway.breaker_seconds,
        )

    async def call(self, request: CallRequest, *, hop: bool = False) -> CallResult:
        """Forward one call; never raises (its failures, even a bug of ours, are the answer)."""
        started = time.perf_counter()
        card = self._index.card(request.namespace, request.name)
        attempts = 0
        try:
            if hop:
                raise CallFailed("loop_refused", "the call came through a ToolReach gateway")
            card = self._checked(request, card)
            target = await anyio.to_thread.run_sync(self._target, card)
            result, attempts = await self._forward(request, target)
            answer = CallResult(ok=True, name=card.name, namespace=request.namespace, result=result)
        except Exception as exc:
            failure = exc if isinstance(exc, CallFailed) else _internal(exc, [])
            answer = CallResult(
                ok=False,
                name=card.name if card is not None else request.name,
                namespace=request.namespace,
                error=error_of(failure, card),
            )
            attempts = failure.attempts or attempts
        answer.route_id, answer.attempts = request.route_id, attempts
        answer.latency_ms = round((time.perf_counter() - started) * 1000, 3)
        await self._report(request, card, answer)
        return answer

    async def call_batch(
        self, requests: list[CallRequest], *, hop: bool = False
    ) -> list[CallResult]:
        """Every call at once; each answers for itself (partial failure is normal)."""
        results: list[CallResult | None] = [None] * len(requests)

        async def one(i: int) -> None:
            results[i] = await self.call(requests[i], hop=hop)

        async with anyio.create_task_group() as group:
            for i in range(len(requests)):
                group.start_soon(one, i)
        return [r for r in results if r is not None]

    def _checked(self, request: CallRequest, card: ToolCard | None) -> ToolCard:
        if card is None:
            names = self._index.names(request.namespace)
            suggestions = did_you_mean(request.name, names)
            hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
            raise CallFailed(
                "unknown_tool",
                f"no tool {request.name!r} in namespace {request.namespace!r}{hint}",
                details={"did_you_mean": suggestions},
            )
        problems = validate_arguments(card, request.arguments)
        if problems:
            raise CallFailed(
                "invalid_arguments",
                f"the arguments do not fit {card.name!r}: {problems[0].message}",
                details=[
                    {"path": p.path, "message": p.message, "suggestion": p.suggestion}
                    for p in problems
                ],
            )
        return card

    def _target(self, card: ToolCard) -> Target:
        if card.source is None:
            raise CallFailed(
                "not_callable", f"{card.name!r} was written by hand, not read from a source"
            )
        try:
            with unit_of_work(self._factory) as session:
                found = sources.binding(session, card.source.name, card.name)
                if found is None:
                    raise CallFailed(
                        "not_callable", f"source {card.source.name!r} no longer has {card.name!r}"
                    )
                source, tool = found
                config = SourceConfig.model_validate(source.config)
                return Target(source.name, config, parse(tool.binding, tool.name))
        except BindingUnreadable as exc:
            raise _unreadable(exc, card.source.name) from None
        except DATABASE_TROUBLE:
            raise CallFailed(
                "unavailable", "the registry's database is unavailable", retryable=True
            ) from None

    async def _forward(self, request: CallRequest, target: Target) -> tuple[Any, int]:
        deadline = Deadline.of(request.timeout_seconds, self.settings.gateway.timeout_seconds)
        try:
            return await forward(
                target.source,
                self._limits.of(target.source),
                deadline,
                lambda: self._send(request, target),
                attempts=self.settings.gateway.attempts,
                safe=target.binding.safe,
            )
        except CallFailed as failure:
            if failure.code == "timeout" and failure.source_fault and _is_mcp(target):
                await self.pool.retire(target.source)  # a session stuck mid-call: not reused
            raise

    async def _send(self, request: CallRequest, target: Target) -> Any:
        """One attempt; CallFailed for every failure, worded for the agent, its messages
        without the source's secrets."""
        secrets = secret_values(target.config, self._reach.secret_dirs)
        binding = target.binding
        try:
            if isinstance(binding, McpBinding):
                return await mcp_call.call_tool(
                    self.pool,
                    target.source,
                    target.config,
                    binding.tool,
                    request.arguments,
                    self._reach.rules.max_response_bytes,
                )
            return await self._send_http(request, target.config, binding)
        except CallFailed as failure:
            failure.message = mask(failure.message, secrets)[:MESSAGE_CHARS]
            failure.details = mask(failure.details, secrets)
            raise
        except TimeoutError:
            raise  # the source's own time ran out (app/gateway/forward.py words it)
        except Exception as exc:
            raise _worded(exc, secrets) from None

    async def _send_http(
        self, request: CallRequest, config: SourceConfig, binding: HttpBinding
    ) -> Any:
        headers = resolve_all(config.headers, self._reach.secret_dirs, header_problem)
        query = resolve_all(config.query, self._reach.secret_dirs)
        timeout = self.settings.gateway.timeout_seconds  # the source's own: never the caller's
        async with http_client(self._reach.rules, timeout=timeout) as client:
            built = http_call.build_request(
                client,
                binding,
                request.arguments,
                headers=headers.values,
                query=query.values,
            )
            response = await http_call.send(client, built)
            secrets = headers.secrets + query.secrets
            if len(response.content) <= INLINE_BYTES:
                return http_call.result_or_failure(response, secrets)
            return await anyio.to_thread.run_sync(http_call.result_or_failure, response, secrets)

    async def _report(
        self, request: CallRequest, card: ToolCard | None, answer: CallResult
    ) -> None:
        code = None if answer.ok or answer.error is None else answer.error.code
        self._metrics.count_call(request.namespace, code, answer.latency_ms / 1000)
        if request.route_id is None or card is None:
            return
        outcome: Outcome = "success" if answer.ok else "error"
        if code in ("invalid_arguments", "not_callable", "loop_refused"):
            outcome = "unknown"  # not forwarded: the tool was chosen, its outcome not known
        recorded = await anyio.to_thread.run_sync(
            record_call,
            self._factory,
            self._events,
            self._index,
            request.namespace,
            request.route_id,
            card.name,
            outcome,
            None if outcome != "error" else code,
        )
        if recorded is not None:
            self._metrics.count_feedback(recorded.namespace, recorded.outcome, recorded.verdict)

    async def aclose(self) -> None:
        await self.pool.aclose()


def _is_mcp(target: Target) -> bool:
    return isinstance(target.binding, McpBinding)


def _unreadable(exc: BindingUnreadable, source: str) -> CallFailed:
    """A stored binding that does not fit its type: nothing is sent."""
    return CallFailed(
        "not_callable",
        f"source {source!r}: {exc}",
        details={"source": source, "reason": str(exc)},
        suggestion="The tool's stored binding is unreadable: tell the operator "
        f"(toolreach source sync {source} --force writes it again).",
    )


def _worded(exc: Exception, secrets: list[str]) -> CallFailed:
    """An exception of one attempt as the agent's structured error."""
    if isinstance(exc, SecretMissing):
        return CallFailed("credentials_missing", str(exc))
    if isinstance(exc, OutboundRefused):
        return CallFailed("outbound_refused", str(exc))
    if isinstance(exc, ResponseTooLarge):
        return CallFailed("response_too_large", str(exc), answered=True)
    if isinstance(exc, httpx.LocalProtocolError):  # refused by httpx itself: never sent
        message = f"the request cannot be sent as HTTP: {type(exc).__name__}"
        return CallFailed("invalid_arguments", message)
    found = unreached(exc)
    if found is not None:
        return unreachable(found)
    if isinstance(exc, httpx.TransportError | OSError):
        message = f"the source cannot be reached: {reason(exc)}"
        return CallFailed("unreachable", message, retryable=True, source_fault=True)
    return _internal(exc, secrets)


LOGGED_FRAMES, LOGGED_CHARS = 20, 8000  # of a bug's traceback: a deep one runs to 100s of KB


def _internal(exc: Exception, secrets: list[str]) -> CallFailed:
    """A bug of ours: logged (its innermost frames, the secrets masked, then cut to size),
    answered as the call's own error."""
    text = "".join(traceback.format_exception(exc, limit=-LOGGED_FRAMES))
    log.error("a call failed unexpectedly: %s", mask(text, secrets)[-LOGGED_CHARS:])
    return CallFailed("internal", "the gateway failed on this call; it has been logged")


CallTool = Callable[[CallRequest], Awaitable[CallResult]]
