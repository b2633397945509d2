"""The gateway: a call by name is validated, forwarded to the tool's source, and answered with
the tool's result or a structured error (code, message, retryable, the card's suggestion).

One call, in order:

1. the tool is looked up in the live index (an unknown name: ``unknown_tool`` with the
   closest real names); the arguments are checked against its schema
   (``invalid_arguments`` with the exact problems);
2. its source and binding are read (a tool without a source: ``not_callable``);
3. the source's circuit breaker and in-flight limit are passed (``circuit_open``,
   ``overloaded``);
4. it is sent (an HTTP request, or MCP ``tools/call`` on the source's session), within the
   call's timeout; a call safe to repeat (GET, HEAD, OPTIONS; an MCP tool annotated
   ``readOnlyHint`` or ``idempotentHint``) is retried on a retryable failure;
5. with a ``route_id`` it is recorded as that route's report (app/loop/feedback.py), so
   ``/v1/stats`` and the dashboard count it without a feedback request.

Credentials are read at step 4 and masked out of every answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from mcp.shared.exceptions import MCPError
from sqlalchemy.orm import Session, sessionmaker

from app.db import DATABASE_TROUBLE, unit_of_work
from app.gateway import http_call
from app.gateway.failures import CallFailed
from app.gateway.limits import Limits
from app.gateway.mcp_pool import McpPool
from app.gateway.schemas import CallError, CallRequest, CallResult
from app.loop.events import EventWriter
from app.loop.feedback import record_call
from app.metrics import Metrics
from app.schemas import Outcome
from app.settings import Settings
from app.sources import repository as sources
from app.sources.mcp import Reach
from app.sources.outbound import TOO_LARGE, OutboundRefused, ResponseTooLarge, http_client
from app.sources.schemas import SourceConfig
from app.sources.secrets import SecretMissing, mask, resolve_all
from app.tools.live_index import IndexManager
from registry.calls import did_you_mean, validate_arguments
from registry.card import ToolCard

log = logging.getLogger("toolreach.gateway")
BACKOFF_SECONDS = 0.2
# The gateway's own codes: what an agent should do next (a card's own table comes first).
SUGGESTIONS = {
    "unknown_tool": "Use one of the names in did_you_mean, or route the step again.",
    "invalid_arguments": "Correct the arguments as each problem says, then call again.",
    "not_callable": "This tool has no source the gateway can reach: call it yourself.",
    "timeout": "The source did not answer in time; retry later if the call is safe to repeat.",
    "circuit_open": "The source is failing; wait before calling it again, or use another tool.",
    "overloaded": "Too many calls to this source at once; retry in a moment.",
    "unreachable": "The source cannot be reached now; retry later or use another tool.",
    "outbound_refused": "The outbound rules forbid this destination; tell the operator.",
    "redirect_refused": "The source redirected elsewhere, which is refused; tell the operator.",
    "response_too_large": "The answer was too large; ask for less (filters, a smaller page).",
    "protocol_error": "The source answered malformed data; retry later or tell the operator.",
    "credentials_missing": "The source's credentials are not configured; tell the operator.",
    "tool_error": "The tool reported an error: read the message, fix the call or try another.",
    "loop_refused": "The call came through this gateway already; it would loop.",
}


@dataclass(frozen=True)
class Target:
    """Where a call goes: the source's name and config, and the tool's binding."""

    source: str
    config: SourceConfig
    binding: dict[str, Any]


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
            settings.gateway_source_concurrency,
            settings.gateway_breaker_failures,
            settings.gateway_breaker_seconds,
        )

    async def call(self, request: CallRequest, *, hop: bool = False) -> CallResult:
        """Forward one call; never raises for the call's own failures (they are the answer)."""
        started = time.perf_counter()
        card = self._index.card(request.namespace, request.name)
        attempts = 0
        try:
            if hop:
                raise CallFailed("loop_refused", "the call came through a ToolReach gateway")
            card = self._checked(request, card)
            target = await anyio.to_thread.run_sync(self._target, card)
            result, attempts = await self._forward(request, card, target)
            answer = CallResult(ok=True, name=card.name, namespace=request.namespace, result=result)
        except CallFailed as failure:
            answer = CallResult(
                ok=False,
                name=card.name if card is not None else request.name,
                namespace=request.namespace,
                error=_error(failure, card),
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
                return Target(source.name, config, dict(tool.binding))
        except DATABASE_TROUBLE:
            raise CallFailed(
                "unavailable", "the registry's database is unavailable", retryable=True
            ) from None

    async def _forward(
        self, request: CallRequest, card: ToolCard, target: Target
    ) -> tuple[Any, int]:
        limits = self._limits.of(target.source)
        if not limits.breaker.allow():
            raise CallFailed(
                "circuit_open",
                f"source {target.source!r} failed {limits.breaker.failures} times in a row; "
                f"calls resume in {limits.breaker.retry_after():.0f} s",
                retryable=True,
            )
        timeout = min(request.timeout_seconds or 1e9, self.settings.gateway_timeout_seconds)
        attempts = 0
        try:
            with anyio.fail_after(timeout):
                async with limits.slots:
                    while True:
                        attempts += 1
                        try:
                            result = await self._send(request, target, timeout)
                            limits.breaker.succeeded()
                            return result, attempts
                        except CallFailed as failure:
                            if failure.source_fault:
                                limits.breaker.failed()
                            if not (
                                failure.retryable
                                and target.binding.get("safe")
                                and attempts < self.settings.gateway_attempts
                                and limits.breaker.allow()
                            ):
                                failure.attempts = attempts
                                raise
                        await anyio.sleep(BACKOFF_SECONDS * 2 ** (attempts - 1))
        except TimeoutError:
            limits.breaker.failed()
            if target.binding.get("kind") == "mcp":
                await self.pool.drop(target.source)  # a session stuck mid-call is not reused
            late = CallFailed(
                "timeout",
                f"no answer from source {target.source!r} within {timeout:g} s",
                retryable=True,
                source_fault=True,
            )
            late.attempts = attempts
            raise late from None

    async def _send(self, request: CallRequest, target: Target, timeout: float) -> Any:
        """One attempt; CallFailed for every failure, worded for the agent."""
        secrets: list[str] = []
        try:
            if target.binding.get("kind") == "mcp":
                return await self._send_mcp(request, target)
            headers = resolve_all(target.config.headers, self._reach.secret_dirs)
            query = resolve_all(target.config.query, self._reach.secret_dirs)
            secrets = headers.secrets + query.secrets
            async with http_client(self._reach.rules, timeout=timeout) as client:
                built = http_call.build_request(
                    client,
                    target.binding,
                    request.arguments,
                    headers=headers.values,
                    query=query.values,
                )
                response = await http_call.send(client, built)
                return mask(http_call.result_or_failure(response), secrets)
        except CallFailed as failure:
            failure.message = mask(failure.message, secrets)
            failure.details = mask(failure.details, secrets)
            raise
        except SecretMissing as exc:
            raise CallFailed("credentials_missing", str(exc)) from None
        except OutboundRefused as exc:
            raise CallFailed("outbound_refused", str(exc)) from None
        except ResponseTooLarge as exc:
            raise CallFailed("response_too_large", str(exc), source_fault=True) from None
        except httpx.TimeoutException:
            raise CallFailed(
                "timeout", "the source did not answer in time", retryable=True, source_fault=True
            ) from None
        except (httpx.TransportError, OSError) as exc:
            raise CallFailed(
                "unreachable",
                f"the source cannot be reached: {type(exc).__name__}",
                retryable=True,
                source_fault=True,
            ) from None

    async def _send_mcp(self, request: CallRequest, target: Target) -> Any:
        try:
            result, secrets = await self.pool.call(
                target.source, target.config, target.binding["tool"], request.arguments
            )
        except SecretMissing as exc:
            raise CallFailed("credentials_missing", str(exc)) from None
        except OutboundRefused as exc:
            raise CallFailed("outbound_refused", str(exc)) from None
        except TimeoutError:
            raise
        except MCPError as exc:
            code = "response_too_large" if TOO_LARGE in str(exc) else "protocol_error"
            await self.pool.drop(target.source)
            raise CallFailed(code, f"the MCP call failed: {exc}", source_fault=True) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            await self.pool.drop(target.source)
            raise CallFailed(
                "unreachable",
                f"the MCP server cannot be reached: {_reason(exc)}",
                retryable=True,
                source_fault=True,
            ) from None
        except Exception as exc:  # a malformed answer, an answer too large, the SDK's checks
            await self.pool.drop(target.source)
            code = "response_too_large" if _too_large(exc) else "protocol_error"
            message = f"the MCP server's answer is unusable: {_reason(exc)}"
            raise CallFailed(code, message, source_fault=True) from None
        dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        answer: dict[str, Any] = mask(dumped, secrets)
        answer.pop("_meta", None)
        answer.pop("resultType", None)
        if result.is_error:
            texts = [c.get("text", "") for c in answer.get("content", []) if isinstance(c, dict)]
            message = " ".join(texts)[:2000] or "the tool reported an error"
            raise CallFailed("tool_error", message, details=answer)
        return answer

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
            request.route_id,
            card.name,
            outcome,
            None if outcome != "error" else code,
        )
        if recorded is not None:
            self._metrics.count_feedback(recorded.namespace, recorded.outcome, recorded.verdict)

    async def aclose(self) -> None:
        await self.pool.aclose()


def _reason(exc: BaseException) -> str:
    nested = getattr(exc, "exceptions", None)
    if nested:
        return _reason(nested[0])
    return f"{type(exc).__name__}: {str(exc)[:200]}".rstrip(": ")


def _too_large(exc: BaseException) -> bool:
    if isinstance(exc, ResponseTooLarge):
        return True
    return any(_too_large(e) for e in getattr(exc, "exceptions", ()))


def _error(failure: CallFailed, card: ToolCard | None) -> CallError:
    """The structured error, with the card's suggestion for its code when it has one
    (an exact code, then its class: "404", then "4XX")."""
    suggestion = failure.suggestion
    if card is not None:
        entries = {e.code.upper(): e for e in card.errors}
        entry = entries.get(failure.code.upper()) or entries.get(failure.code[:1] + "XX")
        if entry is not None and entry.suggestion:
            suggestion = entry.suggestion
    return CallError(
        code=failure.code,
        message=failure.message,
        retryable=failure.retryable,
        suggestion=suggestion or SUGGESTIONS.get(failure.code),
        details=failure.details,
    )


CallTool = Callable[[CallRequest], Awaitable[CallResult]]
