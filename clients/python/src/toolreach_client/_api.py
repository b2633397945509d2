"""Each endpoint as data (method, path, body, whether it may be repeated, how to read the
answer), shared by the sync and async clients, which only send it (sans-I/O)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from toolreach_client import models as m

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=BaseModel)
# The fields compared to tell one's own card from another's (stored as they were sent).
CARD_FIELDS = ("name", "summary", "description", "parameters", "tags", "examples")


@dataclass(frozen=True)
class ApiCall(Generic[T]):
    """One request. ``idempotent``: safe to send again when an attempt got no answer.
    ``route_lag``: a 404 may be a route another replica has not written yet: wait, retry."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: Any = None
    params: Mapping[str, Any] | None = None
    idempotent: bool = True
    route_lag: bool = False


def _model(cls: type[ModelT]) -> Callable[[httpx.Response], ModelT]:
    return lambda response: cls.model_validate(response.json())


def _json(response: httpx.Response) -> Any:
    return response.json()


def _none(_response: httpx.Response) -> None:
    return None


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _tool_path(name: str) -> str:
    return f"/v1/tools/{quote(name, safe='')}"


def route(request: m.RouteRequest) -> ApiCall[m.RouteAnswer]:
    return ApiCall("POST", "/v1/route", _model(m.RouteAnswer), json=request.body())


def route_batch(request: m.RouteBatchRequest) -> ApiCall[m.RouteBatchAnswer]:
    return ApiCall("POST", "/v1/route/batch", _model(m.RouteBatchAnswer), json=request.body())


def validate(request: m.ValidateRequest) -> ApiCall[m.Validation]:
    return ApiCall("POST", "/v1/validate", _model(m.Validation), json=request.body())


def feedback(request: m.FeedbackRequest) -> ApiCall[m.Feedback]:
    body = request.model_dump(mode="json", exclude_none=True) | {"chosen": request.chosen}
    return ApiCall("POST", "/v1/feedback", _model(m.Feedback), json=body, route_lag=True)


def call(request: m.CallRequest) -> ApiCall[m.CallResult]:
    # A tool call may have run when no answer came: never repeated then (the gateway itself
    # repeats the calls its tool marks safe). A 503 or 429 refusal is still retried.
    return ApiCall("POST", "/v1/call", _model(m.CallResult), json=request.body(), idempotent=False)


def call_batch(requests: list[m.CallRequest]) -> ApiCall[m.BatchCallResult]:
    body = {"calls": [r.body() for r in requests]}
    return ApiCall("POST", "/v1/call/batch", _model(m.BatchCallResult), json=body, idempotent=False)


def create_tool(tool: Mapping[str, Any], namespace: str | None) -> ApiCall[m.Tool]:
    # Repeatable: a repeat that finds its own first attempt landed answers 409, which the
    # client resolves by comparing the stored card with what it sent (same_card).
    params = _params(namespace=namespace)
    return ApiCall("POST", "/v1/tools", _model(m.Tool), json=dict(tool), params=params)


def put_tool(name: str, tool: Mapping[str, Any], namespace: str | None) -> ApiCall[m.Tool]:
    params = _params(namespace=namespace)
    return ApiCall("PUT", _tool_path(name), _model(m.Tool), json=dict(tool), params=params)


def bulk(tools: list[Mapping[str, Any]], namespace: str | None) -> ApiCall[m.BulkResult]:
    body = {"tools": [dict(t) for t in tools], **_params(namespace=namespace)}
    return ApiCall("POST", "/v1/tools/bulk", _model(m.BulkResult), json=body)


def get_tool(name: str, namespace: str | None, version: int | None) -> ApiCall[m.Tool]:
    params = _params(namespace=namespace, version=version)
    return ApiCall("GET", _tool_path(name), _model(m.Tool), params=params)


def export_tool(
    name: str, namespace: str | None, version: int | None, format: m.ExportFormat
) -> ApiCall[dict[str, Any]]:
    params = _params(namespace=namespace, version=version, format=format)
    return ApiCall("GET", _tool_path(name), _json, params=params)


def list_tools(**filters: Any) -> ApiCall[m.ToolList]:
    return ApiCall("GET", "/v1/tools", _model(m.ToolList), params=_params(**filters))


def delete_tool(name: str, namespace: str | None) -> ApiCall[None]:
    return ApiCall("DELETE", _tool_path(name), _none, params=_params(namespace=namespace))


def stats(**filters: Any) -> ApiCall[m.Stats]:
    return ApiCall("GET", "/v1/stats", _model(m.Stats), params=_params(**filters))


def tool_name(tool: Mapping[str, Any]) -> str:
    """The name of a tool in any format the service reads."""
    inner = tool.get("function")
    name = inner.get("name") if isinstance(inner, Mapping) else tool.get("name")
    if not isinstance(name, str):
        raise ValueError("the tool has no name")
    return name


def same_card(sent: Mapping[str, Any], stored: m.Tool) -> bool:
    """Whether ``stored`` is what ``sent`` wrote: each card field the request set, or (for a
    tool in a model API's format) its description."""
    inner = sent.get("function")
    source = inner if isinstance(inner, Mapping) else sent
    if not any(k in sent for k in ("input_schema", "inputSchema", "function", "type")):
        fields = [f for f in CARD_FIELDS if f in sent]
        stored_card = stored.model_dump(mode="json")
        return all(sent[f] == stored_card.get(f) for f in fields)
    return source.get("description") == stored.description
