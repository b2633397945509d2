"""Access rules and the one error shape, everywhere."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.test_tools import weather_card
from tests.conftest import ADMIN, AGENT, make_settings


def assert_error(response: object, status: int, code: str) -> None:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    assert "Traceback" not in response.text  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/v1/tools"),
        ("put", "/v1/tools/x"),
        ("delete", "/v1/tools/x"),
        ("post", "/v1/tools/bulk"),
    ],
)
def test_writes_need_an_admin_key(client: TestClient, method: str, path: str) -> None:
    body = {"json": weather_card()} if method != "delete" else {}
    assert_error(client.request(method, path, **body), 401, "unauthorized")
    assert_error(client.request(method, path, headers=AGENT, **body), 403, "forbidden")
    bad = {"Authorization": "Bearer not-a-real-key-at-all"}
    assert_error(client.request(method, path, headers=bad, **body), 401, "unauthorized")


def test_reads_need_an_agent_key_when_agent_keys_are_set(client: TestClient) -> None:
    assert_error(client.get("/v1/tools"), 401, "unauthorized")
    assert client.get("/v1/tools", headers=AGENT).status_code == 200
    assert client.get("/v1/tools", headers=ADMIN).status_code == 200
    response = client.post("/v1/validate", json={"name": "x"})
    assert_error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"


def test_agent_endpoints_open_without_agent_keys(database_url: str) -> None:
    from app.embedding.encoders import make_encoder
    from app.main import create_app

    app = create_app(make_settings(database_url, agent_keys=()), encoder=make_encoder("fake"))
    with TestClient(app) as open_client:
        assert open_client.get("/v1/tools").status_code == 200
        # Open: not a 401, but an empty registry's namespace is one that never held a tool.
        assert_error(open_client.post("/v1/validate", json={"name": "x"}), 404, "not_found")
        assert_error(open_client.post("/v1/tools", json=weather_card()), 401, "unauthorized")


def security_of(document: dict, path: str, method: str) -> object:
    return document["paths"][path][method].get("security")


AGENT_OPERATIONS = [("/v1/route", "post"), ("/v1/tools", "get"), ("/v1/validate", "post")]
ADMIN_OPERATIONS = [("/v1/tools", "post"), ("/v1/keys", "get"), ("/v1/stats", "get")]


def test_openapi_says_when_the_agent_endpoints_are_open(database_url: str) -> None:
    """The document declared a required bearer key on endpoints open to anyone."""
    from app.embedding.encoders import make_encoder
    from app.main import create_app

    app = create_app(make_settings(database_url, agent_keys=()), encoder=make_encoder("fake"))
    with TestClient(app) as open_client:
        document = open_client.get("/openapi.json").json()
        for path, method in AGENT_OPERATIONS:
            assert security_of(document, path, method) == [{}, {"HTTPBearer": []}], path
        for path, method in ADMIN_OPERATIONS:
            assert security_of(document, path, method) == [{"HTTPBearer": []}], path
        assert security_of(document, "/healthz", "get") is None
        # An agent key made at run time closes them, and the document says so at once.
        made = open_client.post("/v1/keys", json={"role": "agent"}, headers=ADMIN)
        assert made.status_code == 201, made.text
        assert_error(open_client.post("/v1/route", json={"query": "x"}), 401, "unauthorized")
        closed = open_client.get("/openapi.json").json()
        for path, method in AGENT_OPERATIONS + ADMIN_OPERATIONS:
            assert security_of(closed, path, method) == [{"HTTPBearer": []}], path


def test_openapi_requires_the_key_when_agent_keys_are_set(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    for path, method in AGENT_OPERATIONS + ADMIN_OPERATIONS:
        assert security_of(document, path, method) == [{"HTTPBearer": []}], path


@pytest.mark.parametrize(
    "body",
    [b'{"name": ', b'{"name": "caf\xe9"}', b'{"query": "x", "k": 1' + b"0" * 5000 + b"}"],
    ids=["cut short", "not UTF-8", "an integer of 5,000 digits"],
)
def test_malformed_json(client: TestClient, body: bytes) -> None:
    for path in ("/v1/tools", "/v1/route"):
        headers = {**ADMIN, "Content-Type": "application/json"}
        assert_error(client.post(path, content=body, headers=headers), 400, "malformed_json")


@pytest.mark.parametrize(
    ("content_type", "said"),
    [
        ("application/x-www-form-urlencoded", "Content-Type: application/x-www-form-urlencoded"),
        ("text/plain", "Content-Type: text/plain"),
        (None, "no Content-Type"),
    ],
)
def test_a_json_body_without_its_content_type_is_said_to_need_it(
    client: TestClient, content_type: str | None, said: str
) -> None:
    """curl -d sends a form type: the 422 says what to add (and it is not read as JSON: a
    browser may send such a body to any site without a CORS preflight)."""
    headers = {**ADMIN, **({"Content-Type": content_type} if content_type else {})}
    for path in ("/v1/route", "/v1/call", "/v1/tools"):
        response = client.post(path, content=b'{"query": "x", "name": "y"}', headers=headers)
        assert_error(response, 422, "invalid_input")
        message = response.json()["error"]["message"]
        assert message.startswith("the body must be JSON sent with Content-Type: application/json")
        assert said in message and "-H 'Content-Type: application/json'" in message
    sent = {**ADMIN, "Content-Type": "application/json; charset=utf-8"}
    right = client.post("/v1/route", content=b'{"query": 5}', headers=sent)
    assert right.json()["error"]["message"] == "the request does not match its schema"


def test_wrong_types_and_unknown_fields(client: TestClient) -> None:
    assert_error(client.post("/v1/tools", json=[1, 2], headers=ADMIN), 422, "invalid_input")
    assert_error(
        client.post("/v1/tools", json=weather_card(colour="blue"), headers=ADMIN),
        422,
        "invalid_input",
    )
    assert_error(
        client.post("/v1/tools/bulk", json={"tools": [], "extra": 1}, headers=ADMIN),
        422,
        "invalid_input",
    )
    assert_error(client.post("/v1/validate", json={"name": 5}, headers=AGENT), 422, "invalid_input")


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"name": "has space"}, "name"),
        ({"name": "x" * 129}, "name"),
        ({"description": ""}, "description"),
        ({"parameters": {"type": "string"}}, "object"),
        ({"parameters": {"type": 5}}, "parameters"),
        ({"parameters": {"type": "object", "required": ["city"]}}, "city"),
        ({"returns": {"type": "nonsense"}}, "returns"),
        ({"parameters": {"type": "object", "properties": {"a": {"$ref": "http://evil/x"}}}}, "ref"),
        (
            {
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "string", "pattern": "(a)\\1"}},
                }
            },
            "pattern",
        ),
        ({"tags": ["x" * 65]}, "tags"),
    ],
)
def test_invalid_cards(client: TestClient, overrides: dict[str, object], needle: str) -> None:
    response = client.post("/v1/tools", json=weather_card(**overrides), headers=ADMIN)
    assert_error(response, 422, "invalid_input")
    assert needle.lower() in str(response.json()["error"]).lower()


def test_body_over_the_limit(database_url: str) -> None:
    from app.embedding.encoders import make_encoder
    from app.main import create_app

    app = create_app(make_settings(database_url, max_body_bytes=2048), encoder=make_encoder("fake"))
    with TestClient(app) as small:
        big = weather_card(description="x" * 4000)
        assert_error(small.post("/v1/tools", json=big, headers=ADMIN), 413, "payload_too_large")

        def chunks():  # no Content-Length: the streamed body is counted
            yield b'{"name": "a", "description": "'
            for _ in range(10):
                yield b"y" * 500
            yield b'"}'

        streamed = small.post(
            "/v1/tools", content=chunks(), headers={**ADMIN, "Content-Type": "application/json"}
        )
        assert_error(streamed, 413, "payload_too_large")


def test_unknown_tool_and_route(client: TestClient) -> None:
    assert_error(client.get("/v1/tools/nope", headers=AGENT), 404, "not_found")
    assert_error(client.get("/v1/nothing-here"), 404, "not_found")
    assert_error(client.patch("/v1/tools/x", headers=ADMIN), 405, "method_not_allowed")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("delete", "/v1/tools", "GET, POST"),
        ("patch", "/v1/tools/x", "GET, PUT, DELETE"),
        ("get", "/v1/route", "POST"),
        ("put", "/v1/keys", "GET, POST"),
        ("post", "/healthz", "GET"),
    ],
)
def test_a_405_allows_every_method_of_its_path(
    client: TestClient, method: str, path: str, allowed: str
) -> None:
    response = client.request(method, path, headers=ADMIN)
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == allowed


def test_health_and_ready(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready"}  # without a key: ready or not, nothing more


def test_ready_names_no_namespace(client: TestClient) -> None:
    """/readyz answers anyone, and without a key never names a namespace (the names a key's
    scope hides); an admin key limited to none sees the index's namespaces."""
    body = {"tools": [weather_card()], "namespace": "tenant-secret-name"}
    assert client.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
    ready = client.get("/readyz")
    assert ready.json() == {"status": "ready"}
    assert "tenant-secret-name" not in ready.text
    detailed = client.get("/readyz", headers=ADMIN).json()
    assert detailed["namespaces"] == {"tenant-secret-name": 1}


def test_an_error_without_text_is_named_by_its_class() -> None:
    """The 503 handler and the CLI print an exception's first line: an empty one was an
    IndexError (a 500, a traceback)."""
    from app.api.error_handlers import first_line

    assert first_line(Exception("")) == "Exception"
    assert first_line(ValueError("  first\nsecond")) == "first"


def test_a_bug_is_a_500_without_detail_and_one_log_line(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The client learns nothing of the internals; the app logs one line (the server logs the
    traceback once, as Starlette re-raises the exception to it; it was logged twice)."""
    from app.embedding.encoders import make_encoder
    from app.main import create_app
    from tests.conftest import make_settings

    app = create_app(make_settings(database_url), encoder=make_encoder("fake"))

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals\nsecond line")

    with TestClient(app, raise_server_exceptions=False) as client, caplog.at_level("ERROR"):
        answer = client.get("/boom")
    assert_error(answer, 500, "internal")
    assert "secret" not in answer.text
    # (the fake encoder's start also warns that the route confidence was fit for another)
    [record] = [r for r in caplog.records if r.name == "toolreach" and r.levelname == "ERROR"]
    assert record.getMessage() == "unexpected error in GET /boom: secret internals"
    assert record.exc_info is None


@pytest.mark.parametrize(
    "source",
    [
        {"kind": "openapi", "path": "api.json", "base_url": "t"},
        {"kind": "openapi", "url": "file:///etc/passwd"},
        {"kind": "mcp", "url": "http://user:secret@example.com/mcp"},
        {"kind": "mcp", "url": "http:///mcp"},
    ],
)
def test_a_source_url_that_is_not_http_is_the_callers_mistake(
    client: TestClient, source: dict[str, str]
) -> None:
    """Found by the schema fuzzing: a base_url "t" was a 502 (a source that failed)."""
    response = client.post("/v1/sources", json={"name": "s", **source}, headers=ADMIN)
    assert_error(response, 422, "invalid_input")


def test_openapi_documents_the_errors_answered_before_any_route(client: TestClient) -> None:
    """Found by schema fuzzing: POST /v1/keys answered an undocumented 400 (a body that is
    not JSON); the 413 of a body and the 414 of a URL were nowhere either."""
    document = client.get("/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert "414" in codes, (method, path)
            if "requestBody" in operation:
                assert {"400", "413"} <= codes, (method, path)
    assert_error(
        client.post(
            "/v1/keys", content=b"\x1e\xff", headers={**ADMIN, "Content-Type": "application/json"}
        ),
        400,
        "malformed_json",
    )


@pytest.mark.parametrize(
    ("body", "said", "where"),
    [
        (
            b'{"query": "where is my parcel',
            "Unterminated string starting at line 1, column 11",
            {"line": 1, "column": 11, "position": 10},
        ),
        (
            b'{\n  "query": "x",\n  "k": ',
            "Expecting value at line 3, column 8 (the end of the body: is it cut short?)",
            {"line": 3, "column": 8, "position": 25},
        ),
        (
            b'{"query": "x",\n "k": 3,,}',
            "Expecting property name enclosed in double quotes at line 2, column 9",
            {"line": 2, "column": 9, "position": 23},
        ),
    ],
    ids=["a string cut short", "a body cut short", "a stray comma"],
)
def test_malformed_json_says_where(
    client: TestClient, body: bytes, said: str, where: dict[str, int]
) -> None:
    """Issue 42 item 3: json's own words ("Unterminated string starting at") named no
    place; the message and `details` give the line and column."""
    headers = {**AGENT, "Content-Type": "application/json"}
    response = client.post("/v1/route", content=body, headers=headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "malformed_json"
    assert error["message"] == f"the body is not valid JSON: {said}"
    assert error["details"] == where
