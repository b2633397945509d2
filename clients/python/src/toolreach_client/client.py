"""The sync client: ``ToolReach``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import httpx

from toolreach_client import _api as api
from toolreach_client import models as m
from toolreach_client._send import Tries
from toolreach_client.errors import Conflict
from toolreach_client.retry import RetryPolicy
from toolreach_client.step import Step

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8000"


def http_options(base_url: str | None, api_key: str | None, timeout: float) -> dict[str, Any]:
    """What both clients give httpx: the URL and key (arguments, else the environment)."""
    url = base_url or os.environ.get("TOOLREACH_URL") or DEFAULT_URL
    key = api_key or os.environ.get("TOOLREACH_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return {"base_url": url, "headers": headers, "timeout": timeout}


def batch_request(
    steps: Iterable[str | m.RouteRequest | Mapping[str, Any]],
    namespace: str | None,
    common: Mapping[str, Any],
) -> m.RouteBatchRequest:
    """The steps of a batch as route requests. ``common``'s fields (``namespace``, ``k``,
    ``format``…) are every step's defaults: a string step is a query with them, a mapping or
    a ``RouteRequest`` keeps the fields it sets and takes the others from ``common``. A step
    that names no namespace is routed in ``common``'s, else in the client's."""
    defaults = {"namespace": namespace, **common}

    def request(step: str | m.RouteRequest | Mapping[str, Any]) -> m.RouteRequest:
        if isinstance(step, m.RouteRequest):
            fields = step.model_dump(include=step.model_fields_set)
        else:
            fields = {"query": step} if isinstance(step, str) else dict(step)
        if fields.get("namespace") is None:
            fields.pop("namespace", None)
        return m.RouteRequest.model_validate({**defaults, **fields})

    return m.RouteBatchRequest(steps=[request(s) for s in steps])


def call_requests(calls: Iterable[m.CallRequest | Mapping[str, Any]]) -> list[m.CallRequest]:
    return [c if isinstance(c, m.CallRequest) else m.CallRequest.model_validate(c) for c in calls]


class ToolReach:
    """A ToolReach service. ``base_url`` and ``api_key`` default to ``TOOLREACH_URL`` and
    ``TOOLREACH_API_KEY``; ``namespace`` is the default of every call."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        namespace: str = "default",
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        options = http_options(base_url, api_key, timeout)
        self._http = httpx.Client(transport=transport, **options)
        self.namespace = namespace
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.tools = Tools(self)

    def __enter__(self) -> ToolReach:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: api.ApiCall[T]) -> T:
        """Send one request, repeating it as ``retry`` allows (see ``retry.py``)."""
        tries = Tries(call, self.retry)
        while True:
            try:
                response = self._http.request(
                    call.method, call.path, json=call.json, params=call.params
                )
            except httpx.TransportError as exc:
                self._sleep(tries.failed(exc))
                continue
            wait = tries.answered(response)
            if wait is None:
                return call.parse(response)
            self._sleep(wait)

    def route(
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
    ) -> Step:
        """The top-k tools for one step; the ``Step`` validates, calls and reports. A step
        that asks for several things is read as its parts (``Step.parts``) and the tools
        cover them; ``split=False`` reads it as one request."""
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
        return Step(self, self.send(api.route(request)))

    def route_batch(
        self, steps: Iterable[str | m.RouteRequest | Mapping[str, Any]], **common: Any
    ) -> list[Step]:
        """Several steps in one request (up to 16), each routed and recorded on its own;
        ``common``: route fields every step takes unless it sets its own (``namespace``,
        ``k``, ``format``…): ``route_batch([{"query": q}], namespace="spotify")`` routes in
        ``spotify``."""
        request = batch_request(steps, self.namespace, common)
        return [Step(self, a) for a in self.send(api.route_batch(request)).answers]

    def validate(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        namespace: str | None = None,
        route_id: str | None = None,
    ) -> m.Validation:
        """Check a call against the tool's schema; an unknown name gets ``did_you_mean``."""
        request = m.ValidateRequest(
            name=name, arguments=arguments, namespace=namespace or self.namespace, route_id=route_id
        )
        return self.send(api.validate(request))

    def feedback(
        self,
        route_id: str,
        chosen: str | None,
        outcome: m.Outcome = "success",
        error_code: str | None = None,
    ) -> m.Feedback:
        """Report the tool used after a route (None: none fit) and how it went."""
        request = m.FeedbackRequest(
            route_id=route_id, chosen=chosen, outcome=outcome, error_code=error_code
        )
        return self.send(api.feedback(request))

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        namespace: str | None = None,
        route_id: str | None = None,
        timeout_seconds: float | None = None,
    ) -> m.CallResult:
        """Call a tool through the gateway: its result, or a structured error."""
        request = m.CallRequest(
            name=name,
            arguments=arguments or {},
            namespace=namespace or self.namespace,
            route_id=route_id,
            timeout_seconds=timeout_seconds,
        )
        return self.send(api.call(request))

    def call_batch(self, calls: Iterable[m.CallRequest | Mapping[str, Any]]) -> m.BatchCallResult:
        """Several calls at once; each result stands alone (one failing fails only itself)."""
        requests = [
            r.model_copy(update={"namespace": r.namespace or self.namespace})
            for r in call_requests(calls)
        ]
        return self.send(api.call_batch(requests))

    def stats(self, **filters: Any) -> m.Stats:
        """Routes, feedback and hit rates (``namespace``, ``tool``, ``since``, ``until``,
        ``bucket``); needs an admin or dashboard key."""
        return self.send(api.stats(**filters))


class Tools:
    """``/v1/tools``: write and read the cards (writes need an admin key)."""

    def __init__(self, client: ToolReach) -> None:
        self._client = client

    def create(self, tool: Mapping[str, Any], *, namespace: str | None = None) -> m.Tool:
        """Register a new tool; 409 (``Conflict``) if the name exists, unless it is this
        request's own earlier try that landed unanswered."""
        try:
            return self._client.send(api.create_tool(tool, namespace))
        except Conflict as exc:
            if not exc.unanswered:
                raise
            stored = self.get(api.tool_name(tool), namespace=namespace or tool.get("namespace"))
            if not api.same_card(tool, stored):
                raise
            return stored

    def put(self, name: str, tool: Mapping[str, Any], *, namespace: str | None = None) -> m.Tool:
        """Create the tool or write a new version of it (idempotent)."""
        return self._client.send(api.put_tool(name, tool, namespace))

    def bulk(
        self, tools: Iterable[Mapping[str, Any]], *, namespace: str | None = None
    ) -> m.BulkResult:
        """Import many tools, all or none (idempotent)."""
        return self._client.send(api.bulk(list(tools), namespace))

    def get(self, name: str, *, namespace: str | None = None, version: int | None = None) -> m.Tool:
        """One stored card (``version``: an earlier one)."""
        ns = namespace or self._client.namespace
        return self._client.send(api.get_tool(name, ns, version))

    def export(
        self,
        name: str,
        format: m.ExportFormat,
        *,
        namespace: str | None = None,
        version: int | None = None,
    ) -> dict[str, Any]:
        """One tool as a model API takes it (``format``: openai, anthropic, mcp, ...)."""
        ns = namespace or self._client.namespace
        return self._client.send(api.export_tool(name, ns, version, format))

    def list(self, **filters: Any) -> m.ToolList:
        """A page of tools (``namespace``, ``tag``, ``text``, ``offset``, ``limit``,
        ``format``, ``defer_loading``)."""
        return self._client.send(api.list_tools(**filters))

    def delete(self, name: str, *, namespace: str | None = None) -> None:
        """Take a tool out of routing; its versions stay readable."""
        self._client.send(api.delete_tool(name, namespace or self._client.namespace))
