"""A tool's binding as a type (app/sources/binding.py): what every version stored reads back
and is written again the same; what does not fit is refused by name; the HTTP request the
gateway builds from one (app/gateway/http_call.py) is the one it built from the JSON."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.gateway import http_call
from app.gateway.failures import CallFailed
from app.sources.binding import (
    BindingUnreadable,
    BodyArgument,
    BodyFields,
    HttpBinding,
    McpBinding,
    Param,
    parse,
    stored,
)

SERVER = "https://api.example/v1"


def _param(arg: str, where: str, name: str | None = None, **how: Any) -> dict[str, Any]:
    """One of ``params`` as app/sources/openapi_request.py has always written it."""
    return {
        "arg": arg,
        "in": where,
        "name": name or arg,
        "style": how.get("style"),
        "explode": how.get("explode"),
        "collection": how.get("collection"),
    }


# Bindings as the sources wrote them before they were a type (key for key, None kept).
AS_STORED: dict[str, dict[str, Any]] = {
    "box get_files_id": {
        "kind": "http", "method": "GET", "server": "https://api.box.com/2.0",
        "path": "/files/{file_id}", "safe": True,
        "params": [_param("file_id", "path"), _param("fields", "query", explode=False),
                   _param("if-none-match", "header"), _param("session", "cookie")],
        "body": None,
    },
    "slack form": {
        "kind": "http", "method": "POST", "server": "https://slack.com/api",
        "path": "/chat.postMessage", "safe": False,
        "params": [_param("ids", "query", collection="csv")],
        "body": {"media": "application/x-www-form-urlencoded", "fields": ["channel", "text"]},
    },
    "one body argument": {
        "kind": "http", "method": "PUT", "server": "https://x.example", "path": "/raw",
        "safe": False, "params": [], "body": {"media": "text/plain", "arg": "body"},
    },
    "no server": {
        "kind": "http", "method": "POST", "server": None, "path": "/v2/agents/{uuid}/chat",
        "safe": False, "not_callable": "its server URL 'https://{agent_url}' has the "
        "variable {agent_url} with no default",
        "params": [_param("uuid", "path")], "body": None,
    },
    "mcp": {"kind": "mcp", "tool": "read_file", "safe": True},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(AS_STORED))
def test_a_stored_binding_reads_back_and_is_written_the_same(name: str) -> None:
    binding = parse(AS_STORED[name], name)
    assert stored(binding) == AS_STORED[name]
    assert list(stored(binding)) == list(AS_STORED[name])  # the same keys, in the same order


def test_the_types_say_what_the_json_said() -> None:
    box = parse(AS_STORED["box get_files_id"], "box")
    assert isinstance(box, HttpBinding) and box.server == "https://api.box.com/2.0"
    assert [p.place for p in box.params] == ["path", "query", "header", "cookie"]
    assert box.params[1] == Param(arg="fields", place="query", name="fields", explode=False)
    slack = parse(AS_STORED["slack form"], "slack")
    assert isinstance(slack, HttpBinding) and isinstance(slack.body, BodyFields)
    assert slack.body.fields == ("channel", "text")
    raw = parse(AS_STORED["one body argument"], "raw")
    assert isinstance(raw, HttpBinding) and raw.body == BodyArgument(media="text/plain")
    unserved = parse(AS_STORED["no server"], "agent")
    assert isinstance(unserved, HttpBinding) and unserved.server is None
    assert unserved.not_callable is not None and "{agent_url}" in unserved.not_callable
    assert parse(AS_STORED["mcp"], "mcp") == McpBinding(tool="read_file", safe=True)


def test_a_documents_mistyped_style_explode_or_format_reads_as_the_gateway_used_it() -> None:
    """A document may say ``style: 5`` or ``explode: "false"``: stored as written before,
    each reads as what the gateway made of it (neither compared equal to a word it knows;
    a format it does not know repeats the values)."""
    written = {**AS_STORED["box get_files_id"]}
    written["params"] = [_param("q", "query", style=5, explode="false", collection=[1])]
    binding = parse(written, "odd")
    assert isinstance(binding, HttpBinding)
    assert binding.params[0].style is None and binding.params[0].explode is None
    assert binding.params[0].collection == "[1]"


BROKEN: dict[str, Any] = {
    "not an object": ["kind", "http"],
    "no kind": {"tool": "x", "safe": True},
    "an unknown kind": {"kind": "grpc", "tool": "x", "safe": True},
    "mcp with no tool": {"kind": "mcp", "safe": True},
    "http with no path": {"kind": "http", "method": "GET", "server": SERVER, "safe": True},
    "safe as a word": {**AS_STORED["mcp"], "safe": "yes"},
    "a parameter in no place": {
        **AS_STORED["slack form"], "params": [_param("a", "body")]
    },
    "a body of neither shape": {
        **AS_STORED["slack form"], "body": {"media": "application/json", "arg": "payload"}
    },
    "a key of another version": {**AS_STORED["mcp"], "retries": 3},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_stored_binding_that_does_not_fit_is_refused_by_the_tools_name(name: str) -> None:
    with pytest.raises(BindingUnreadable, match="the stored binding of 'list_files' cannot"):
        parse(BROKEN[name], "list_files")


def test_the_refusal_says_where_never_what_was_stored() -> None:
    secretish = {**AS_STORED["mcp"], "tool": {"token": "s3cr3t-value"}}
    with pytest.raises(BindingUnreadable) as refused:
        parse(secretish, "t")
    assert "mcp.tool" in str(refused.value) and "s3cr3t" not in str(refused.value)


def _url(binding: dict[str, Any], arguments: dict[str, Any]) -> str:
    typed = parse(binding, "t")
    assert isinstance(typed, HttpBinding)
    client = httpx.AsyncClient()
    return str(http_call.build_request(client, typed, arguments, headers={}, query={}).url)


# A list in the query, by how the document declares it (as the gateway sent it before).
QUERY_LISTS = [
    ({}, "q=a&q=b+c"),  # OpenAPI's default: form, exploded
    ({"explode": True}, "q=a&q=b+c"),
    ({"explode": False}, "q=a%2Cb+c"),
    ({"style": "pipeDelimited"}, "q=a%7Cb+c"),
    ({"style": "pipeDelimited", "explode": False}, "q=a%2Cb+c"),
    ({"style": "spaceDelimited", "explode": False}, "q=a%2Cb+c"),
    ({"collection": "csv"}, "q=a%2Cb+c"),
    ({"collection": "ssv"}, "q=a+b+c"),
    ({"collection": "tsv"}, "q=a%09b+c"),
    ({"collection": "pipes"}, "q=a%7Cb+c"),
    ({"collection": "multi"}, "q=a&q=b+c"),
    ({"collection": "multi", "explode": False}, "q=a&q=b+c"),
    ({"collection": "multi", "style": "pipeDelimited"}, "q=a%7Cb+c"),
    ({"collection": "csv", "style": "pipeDelimited"}, "q=a%2Cb+c"),
    ({"explode": "false"}, "q=a&q=b+c"),  # not the boolean: as if not said
    ({"collection": 5, "explode": False}, "q=a&q=b+c"),  # a format not known: repeated
    ({"collection": [1]}, "q=a&q=b+c"),  # was a TypeError (an internal error)
]


@pytest.mark.parametrize(("how", "query"), QUERY_LISTS)
def test_a_query_list_is_sent_as_its_binding_says(how: dict[str, Any], query: str) -> None:
    binding = {
        **AS_STORED["box get_files_id"],
        "path": "/q",
        "params": [_param("q", "query", **how)],
    }
    assert _url(binding, {"q": ["a", "b c"]}) == f"https://api.box.com/2.0/q?{query}"


def test_each_place_and_body_is_sent_from_the_type() -> None:
    box = parse(AS_STORED["box get_files_id"], "box")
    assert isinstance(box, HttpBinding)
    arguments = {"file_id": "f 1", "fields": "name", "if-none-match": "v2", "session": "a b"}
    request = http_call.build_request(
        httpx.AsyncClient(), box, arguments, headers={"Authorization": "k"}, query={"key": "s"}
    )
    assert str(request.url) == "https://api.box.com/2.0/files/f%201?key=s&fields=name"
    assert request.headers["if-none-match"] == "v2" and request.headers["cookie"] == "session=a%20b"
    slack = parse(AS_STORED["slack form"], "slack")
    assert isinstance(slack, HttpBinding)
    sent = http_call.build_request(
        httpx.AsyncClient(), slack, {"channel": "C1", "text": "hi"}, headers={}, query={}
    )
    assert sent.method == "POST" and sent.read() == b"channel=C1&text=hi"


def test_no_server_is_not_callable_with_the_reason() -> None:
    unserved = parse(AS_STORED["no server"], "agent")
    assert isinstance(unserved, HttpBinding)
    with pytest.raises(CallFailed) as failed:
        http_call.build_request(httpx.AsyncClient(), unserved, {"uuid": "a"}, headers={}, query={})
    assert failed.value.code == "not_callable"
    assert failed.value.message.startswith("no base URL to call POST /v2/agents/{uuid}/chat at: ")
    assert failed.value.details == {"missing": "base_url", "reason": unserved.not_callable}
