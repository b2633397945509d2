"""The HTTP request an OpenAPI operation describes, built from a call's arguments and sent.

The binding (app/sources/binding.py ``HttpBinding``) says where each argument goes: the
path template, the query, a header, a cookie, or the body (its fields side by side with the
parameters, or one ``body`` argument). The request goes to the operation's server only; a
redirect is followed within that origin (for GET and HEAD, and 307/308 for any method),
never elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from app.gateway import arguments as checked
from app.gateway.failures import CallFailed, deeper_than, too_deep, withheld
from app.sources.binding import Body, BodyArgument, HttpBinding, Param
from app.sources.masking import SecretEchoed, masked_answer
from app.sources.outbound import same_origin

MAX_REDIRECTS = 5
RETRYABLE_STATUS = frozenset({408, 429, 502, 503, 504})
DETAIL_CHARS = 2000  # of an error answer's body, in the structured error


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _joined(value: Any, separator: str = ",") -> str:
    return separator.join(_text(v) for v in value) if isinstance(value, list) else _text(value)


# 2.0's collectionFormat: the separator a list is joined with (``multi``: repeated).
_SEPARATORS: dict[str | None, str] = {"csv": ",", "ssv": " ", "tsv": "\t", "pipes": "|"}


def _query_values(param: Param, value: Any) -> list[str]:
    """A query argument's values: a list repeated (OpenAPI's default, 2.0's ``multi``) or
    joined (``explode: false``, 2.0's ``csv``, ``ssv``, ``pipes``, ``pipeDelimited``)."""
    if not isinstance(value, list):
        return [_text(value)]
    separator = _separator(param)
    return [_text(v) for v in value] if separator is None else [_joined(value, separator)]


def _separator(param: Param) -> str | None:
    """What a list is joined with; None: each value its own ``name=value``."""
    if param.collection is None and param.explode is False:
        return ","
    if param.collection in _SEPARATORS:
        return _SEPARATORS[param.collection]
    return "|" if param.style == "pipeDelimited" else None


def build_request(
    client: httpx.AsyncClient,
    binding: HttpBinding,
    arguments: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    query: Mapping[str, str],
) -> httpx.Request:
    """The request for one call; ``headers`` and ``query`` are the source's own (resolved
    credentials included). An argument its place cannot hold is ``invalid_arguments``
    (app/gateway/arguments.py): nothing is sent. An operation imported with no usable server
    (app/sources/openapi_servers.py) is ``not_callable``, naming what is missing."""
    server = binding.server
    if not server:
        raise _no_server(binding)
    path = binding.path
    params: list[tuple[str, str | int | float | bool | None]] = list(query.items())
    sent_headers = dict(headers)
    cookies: list[str] = []
    sizes: dict[str, int] = {}  # what each path and query argument adds to the URL
    for param in binding.params:
        arg, name = param.arg, param.name
        if arg not in arguments:
            continue
        value = arguments[arg]
        if param.place == "path":
            segment = checked.path_segment(arg, _joined(value))
            path, sizes[arg] = path.replace("{" + name + "}", segment), len(segment)
        elif param.place == "query":
            values = _query_values(param, value)
            params.extend((name, v) for v in values)
            sizes[arg] = sum(len(quote(v, safe="")) + len(name) + 2 for v in values)
        elif param.place == "header":
            sent_headers[name] = checked.header_value(arg, _joined(value))
        else:
            cookies.append(f"{name}={quote(_joined(value), safe='')}")
            checked.bounded_header(arg, "; ".join(cookies))
    if cookies:
        sent_headers["Cookie"] = "; ".join(cookies)
    url = server.rstrip("/") + path
    encoded = sum(len(quote(str(k), safe="")) + len(quote(str(v), safe="")) + 2 for k, v in params)
    checked.bounded_url(len(url) + encoded, sizes)
    if not same_origin(url, server):
        raise CallFailed("outbound_refused", "the request would leave the source's origin")
    body = _body(binding.body, arguments, sent_headers)
    return client.build_request(binding.method, url, params=params, headers=sent_headers, **body)


def _no_server(binding: HttpBinding) -> CallFailed:
    reason = binding.not_callable or "the operation names no server"
    return CallFailed(
        "not_callable",
        f"no base URL to call {binding.method} {binding.path} at: {reason}",
        details={"missing": "base_url", "reason": reason},
        suggestion="Give the source a base_url (toolreach source add ... --base-url URL), "
        "or call the operation yourself at the URL its description names.",
    )


def _body(
    body: Body | None, arguments: Mapping[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    """httpx's keyword for the body (its Content-Type put in ``headers`` when httpx sets none)."""
    if body is None:
        return {}
    if isinstance(body, BodyArgument):
        if body.arg not in arguments:
            return {}
        payload = arguments[body.arg]
    else:
        payload = {k: arguments[k] for k in body.fields if k in arguments}
    media = body.media
    if media == "application/x-www-form-urlencoded":
        return {"data": {k: _joined(v) for k, v in payload.items()}}
    if media == "multipart/form-data":
        return {"files": {k: (None, _joined(v)) for k, v in payload.items()}}
    if media in ("text/plain", "application/octet-stream"):
        headers["Content-Type"] = media
        return {"content": _text(payload).encode()}
    headers["Content-Type"] = media if media != "*/*" else "application/json"
    return {"content": json.dumps(payload, ensure_ascii=False).encode()}


async def send(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """Send, following redirects only within the request's origin."""
    for _ in range(MAX_REDIRECTS + 1):
        response = await client.send(request)
        if not response.is_redirect:
            return response
        target = request.url.join(response.headers.get("location", ""))
        if not same_origin(str(request.url), str(target)):
            raise CallFailed(
                "redirect_refused",
                f"the source redirected to another origin ({target.host}); refused",
                answered=True,
            )
        keeps_method = response.status_code in (307, 308)
        if not keeps_method and request.method not in ("GET", "HEAD"):
            return response
        request = client.build_request(
            request.method,
            target,
            headers=request.headers,
            content=request.content if keeps_method else None,
        )
    raise CallFailed("redirect_refused", f"more than {MAX_REDIRECTS} redirects", answered=True)


def answer(response: httpx.Response) -> Any:
    """The body: JSON when it is JSON, else text; ``response_too_deep`` for JSON nested
    deeper than the gateway passes on (checked before anything walks it)."""
    if not response.content:
        return None
    kind = response.headers.get("content-type", "")
    if "json" in kind:
        try:
            parsed = response.json()
        except RecursionError:  # deeper than Python's stack, so deeper than MAX_DEPTH
            raise too_deep(f"the source's HTTP {response.status_code} answer") from None
        except ValueError:
            return response.text
        if deeper_than(parsed):
            raise too_deep(f"the source's HTTP {response.status_code} answer")
        return parsed
    return response.text


def result_or_failure(response: httpx.Response, secrets: list[str]) -> dict[str, Any]:
    """A 2xx answer's result; CallFailed with the status as its code otherwise. The secrets
    are masked out of the body before it is cut to size (a cut secret would show its start)."""
    try:
        body = masked_answer(answer(response), secrets)
    except SecretEchoed:
        raise withheld() from None
    if response.is_success:
        return {"status": response.status_code, "body": body}
    status = response.status_code
    shown = body if not isinstance(body, str) else body[:DETAIL_CHARS]
    if len(json.dumps(shown, default=str)) > DETAIL_CHARS * 2:
        shown = json.dumps(shown, default=str)[:DETAIL_CHARS]
    raise CallFailed(
        str(status),
        f"the source answered HTTP {status} {response.reason_phrase}".rstrip(),
        retryable=status in RETRYABLE_STATUS or (status >= 500 and status != 501),
        source_fault=status >= 500,
        answered=status < 500,  # any other answer says the source is up
        details={"status": status, "body": shown},
    )
