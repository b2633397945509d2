"""The async client: ``AsyncToolReach``, the same calls as ``ToolReach``, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import httpx

from toolreach_client import _api as api
from toolreach_client import models as m
from toolreach_client._send import Tries
from toolreach_client.client import batch_request, call_requests, http_options
from toolreach_client.errors import Conflict
from toolreach_client.retry import RetryPolicy
from toolreach_client.step import AsyncStep

T = TypeVar("T")


class AsyncToolReach:
    """As ``ToolReach``, for asyncio."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        namespace: str = "default",
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        options = http_options(base_url, api_key, timeout)
        self._http = httpx.AsyncClient(transport=transport, **options)
        self.namespace = namespace
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.tools = AsyncTools(self)

    async def __aenter__(self) -> AsyncToolReach:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, call: api.ApiCall[T]) -> T:
        """As ``ToolReach.send``."""
        tries = Tries(call, self.retry)
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, json=call.json, params=call.params
                )
            except httpx.TransportError as exc:
                await self._sleep(tries.failed(exc))
                continue
            wait = tries.answered(response)
            if wait is None:
                return call.parse(response)
            await self._sleep(wait)

    async def route(
        self,
        query: str,
        *,
        k: int = 3,
        format: m.RouteFormat = "raw",
        context: dict[str, Any] | None = None,
        tags: list[str] | None = None,
        min_score: float | None = None,
        min_confidence: float | None = None,
        namespace: str | None = None,
        call_id: str | None = None,
        split: bool | None = None,
    ) -> AsyncStep:
        """As ``ToolReach.route``."""
        request = m.RouteRequest(
            query=query,
            k=k,
            format=format,
            context=context,
            tags=tags,
            min_score=min_score,
            min_confidence=min_confidence,
            namespace=namespace or self.namespace,
            call_id=call_id,
            split=split,
        )
        return AsyncStep(self, await self.send(api.route(request)))

    async def route_batch(
        self, steps: Iterable[str | m.RouteRequest | Mapping[str, Any]], **common: Any
    ) -> list[AsyncStep]:
        """As ``ToolReach.route_batch``."""
        request = batch_request(steps, self.namespace, common)
        answer = await self.send(api.route_batch(request))
        return [AsyncStep(self, a) for a in answer.answers]

    async def validate(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        namespace: str | None = None,
        route_id: str | None = None,
    ) -> m.Validation:
        """As ``ToolReach.validate``."""
        request = m.ValidateRequest(
            name=name, arguments=arguments, namespace=namespace or self.namespace, route_id=route_id
        )
        return await self.send(api.validate(request))

    async def feedback(
        self,
        route_id: str,
        chosen: str | None,
        outcome: m.Outcome = "success",
        error_code: str | None = None,
    ) -> m.Feedback:
        """As ``ToolReach.feedback``."""
        request = m.FeedbackRequest(
            route_id=route_id, chosen=chosen, outcome=outcome, error_code=error_code
        )
        return await self.send(api.feedback(request))

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        namespace: str | None = None,
        route_id: str | None = None,
        timeout_seconds: float | None = None,
    ) -> m.CallResult:
        """As ``ToolReach.call``."""
        request = m.CallRequest(
            name=name,
            arguments=arguments or {},
            namespace=namespace or self.namespace,
            route_id=route_id,
            timeout_seconds=timeout_seconds,
        )
        return await self.send(api.call(request))

    async def call_batch(
        self, calls: Iterable[m.CallRequest | Mapping[str, Any]]
    ) -> m.BatchCallResult:
        """As ``ToolReach.call_batch``."""
        requests = [
            r.model_copy(update={"namespace": r.namespace or self.namespace})
            for r in call_requests(calls)
        ]
        return await self.send(api.call_batch(requests))

    async def stats(self, **filters: Any) -> m.Stats:
        """As ``ToolReach.stats``."""
        return await self.send(api.stats(**filters))


class AsyncTools:
    """As ``Tools``, awaited."""

    def __init__(self, client: AsyncToolReach) -> None:
        self._client = client

    async def create(self, tool: Mapping[str, Any], *, namespace: str | None = None) -> m.Tool:
        """As ``Tools.create``."""
        try:
            return await self._client.send(api.create_tool(tool, namespace))
        except Conflict as exc:
            if not exc.unanswered:
                raise
            ns = namespace or tool.get("namespace")
            stored = await self.get(api.tool_name(tool), namespace=ns)
            if not api.same_card(tool, stored):
                raise
            return stored

    async def put(
        self, name: str, tool: Mapping[str, Any], *, namespace: str | None = None
    ) -> m.Tool:
        """As ``Tools.put``."""
        return await self._client.send(api.put_tool(name, tool, namespace))

    async def bulk(
        self, tools: Iterable[Mapping[str, Any]], *, namespace: str | None = None
    ) -> m.BulkResult:
        """As ``Tools.bulk``."""
        return await self._client.send(api.bulk(list(tools), namespace))

    async def get(
        self, name: str, *, namespace: str | None = None, version: int | None = None
    ) -> m.Tool:
        """As ``Tools.get``."""
        ns = namespace or self._client.namespace
        return await self._client.send(api.get_tool(name, ns, version))

    async def export(
        self,
        name: str,
        format: m.ExportFormat,
        *,
        namespace: str | None = None,
        version: int | None = None,
    ) -> dict[str, Any]:
        """As ``Tools.export``."""
        ns = namespace or self._client.namespace
        return await self._client.send(api.export_tool(name, ns, version, format))

    async def list(self, **filters: Any) -> m.ToolList:
        """As ``Tools.list``."""
        return await self._client.send(api.list_tools(**filters))

    async def delete(self, name: str, *, namespace: str | None = None) -> None:
        """As ``Tools.delete``."""
        await self._client.send(api.delete_tool(name, namespace or self._client.namespace))
