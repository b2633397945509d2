"""The gateway under hostile use, against an upstream that echoes every request it gets
(tests/sources/echo_upstream.py): no caller can break a source for the others, a bad
argument is the caller's own error, a request stays in its operation's path, and a secret
never comes back in any form (issue 27)."""

from __future__ import annotations

import base64
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.api.loop_support import services_of
from tests.conftest import ADMIN, AGENT, AGENT_KEY, empty_database
from tests.sources.conftest import app_client
from tests.sources.echo_upstream import BASE, EchoUpstream

API_KEY = 'file-secret-KEY+/xyz987 "q" é'  # a query secret: '+', '/', a space, quotes
BASIC = ("robot", "pass-w0rd-42")  # sent as Basic auth: base64 of user:password


def register(client: TestClient, echo: EchoUpstream, name: str = "echo", **extra: object) -> None:
    body = {"name": name, "kind": "openapi", "url": f"{echo.url}{BASE}/openapi.json", **extra}
    response = client.post("/v1/sources", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text


def call(client: TestClient, name: str, arguments: dict | None = None, **extra: object) -> dict:
    body = {"name": name, "arguments": arguments or {}, **extra}
    response = client.post("/v1/call", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    return response.json()


def refused(answer: dict, argument: str) -> str:
    """The message of an ``invalid_arguments`` answer that names ``argument``."""
    error = answer["error"]
    assert answer["ok"] is False and error["code"] == "invalid_arguments", answer
    assert f"argument {argument!r}" in error["message"] and answer["attempts"] == 0
    assert error["details"][0]["path"] == f"/{argument}"
    return str(error["message"])


def test_a_trial_that_ends_in_a_4xx_closes_the_breaker(sqlite_db: str, echo: EchoUpstream) -> None:
    """Before: the half-open trial ended in a 404, `trial` was never cleared, and every
    later call was circuit_open until the process restarted."""
    with app_client(sqlite_db, gateway_breaker_failures=2, gateway_breaker_seconds=0.3) as gw:
        register(gw, echo)
        assert call(gw, "answer_status", {"code": "500"})["error"]["code"] == "500"  # 2 attempts
        assert call(gw, "echo_get")["error"]["code"] == "circuit_open"
        time.sleep(0.4)
        trial = call(gw, "answer_status", {"code": "404"})
        assert trial["error"]["code"] == "404" and trial["attempts"] == 1  # the source is up
        breaker = services_of(gw).gateway._limits.of("echo").breaker  # type: ignore[union-attr]
        assert breaker.closed and not breaker.trial
        assert call(gw, "echo_get")["ok"]
        assert call(gw, "answer_status", {"code": "500"})["error"]["code"] == "500"
        time.sleep(0.4)
        refused(call(gw, "echo_get", {"X-Note": "a\nb"}), "X-Note")  # a trial that says nothing
        assert call(gw, "echo_get")["ok"]  # ...gave the trial back, to this one


def test_an_answer_of_the_source_is_never_its_failure(sqlite_db: str, echo: EchoUpstream) -> None:
    """A redirect refused, a 4xx: the source answered, so it is up. Before, a redirect
    elsewhere counted as the source's failure: any caller could open its circuit."""
    with app_client(sqlite_db, gateway_breaker_failures=1) as gw:
        register(gw, echo)
        for _ in range(2):
            away = call(gw, "redirect_away")
            assert away["error"]["code"] == "redirect_refused" and away["attempts"] == 1
            assert call(gw, "answer_status", {"code": "429"})["error"]["code"] == "429"
        home = call(gw, "redirect_home", {})
        assert home["ok"] and home["result"]["body"]["path"] == f"{BASE}/echo"


def test_a_callers_short_deadline_never_counts_against_the_source(
    sqlite_db: str, echo: EchoUpstream
) -> None:
    """Before: five calls with a tiny timeout_seconds opened the circuit for every caller."""
    with app_client(sqlite_db, gateway_breaker_failures=2) as gw:
        register(gw, echo)
        for _ in range(4):
            late = call(gw, "answer_late", timeout_seconds=0.1)
            assert late["error"]["code"] == "timeout" and late["error"]["retryable"]
            assert "timeout_seconds" in late["error"]["message"]
        assert call(gw, "echo_get")["ok"]
    empty_database(sqlite_db)
    with app_client(sqlite_db, gateway_breaker_failures=1, gateway_source_concurrency=1) as gw:
        register(gw, echo)  # a wait behind another caller's call is not the source's fault
        with ThreadPoolExecutor(1) as other:
            # holds the source's one slot from the moment the upstream has it, for 3 s
            slow = other.submit(call, gw, "answer_after", {"seconds": "3", "q": "held"})
            deadline = time.monotonic() + 30
            while not echo.received("q=held") and time.monotonic() < deadline:
                time.sleep(0.02)
            assert echo.received("q=held"), "the slow call never reached the upstream"
            waited = call(gw, "echo_get", timeout_seconds=0.3)
            assert slow.result()["ok"] and waited["error"]["code"] == "overloaded", waited
        assert waited["attempts"] == 0 and call(gw, "echo_get")["ok"]
    empty_database(sqlite_db)
    with app_client(sqlite_db, gateway_breaker_failures=2, gateway_timeout_seconds=0.5) as gw:
        register(gw, echo)  # the source's own timeout does count
        for _ in range(2):
            assert call(gw, "answer_late")["error"]["code"] == "timeout"
        assert call(gw, "echo_get")["error"]["code"] == "circuit_open"


def test_a_header_argument_with_a_line_break_is_the_callers_error(
    sqlite_db: str, echo: EchoUpstream
) -> None:
    """Before: `unreachable`, retried three times, counted: two such calls opened the
    circuit for every caller."""
    with app_client(sqlite_db, gateway_breaker_failures=2) as gw:
        register(gw, echo)
        before = len(echo.requests)
        for value in ("a\r\nX-Injected: 1", "a\nb", "tab\tis\tfine\x7f"):
            message = refused(call(gw, "echo_get", {"X-Note": value}), "X-Note")
            assert "line break" in message or "control character" in message
        assert len(echo.requests) == before  # nothing was sent
        fine = call(gw, "echo_get", {"X-Note": "tab\tis fine"})
        assert fine["ok"] and fine["result"]["body"]["headers"]["X-Note"] == "tab\tis fine"


def test_arguments_that_break_the_request_are_invalid_arguments(
    sqlite_db: str, echo: EchoUpstream
) -> None:
    """Before: a non-ASCII header and a 900,000-character path or query argument were 500s,
    and one such call in a batch made the whole batch a 500."""
    with app_client(sqlite_db) as gw:
        register(gw, echo)
        assert "outside ASCII" in refused(call(gw, "echo_get", {"X-Note": "héllo"}), "X-Note")
        assert "URL" in refused(call(gw, "get_file", {"file_id": "a" * 900_000}), "file_id")
        assert "URL" in refused(call(gw, "echo_get", {"q": "é" * 300_000}), "q")
        assert "at most" in refused(call(gw, "echo_get", {"X-Note": "n" * 9000}), "X-Note")
        assert "at most" in refused(call(gw, "echo_get", {"session": "c" * 9000}), "session")
        cookie = call(gw, "echo_get", {"session": "héllo; x=1"})  # encoded, one cookie
        assert cookie["result"]["body"]["cookies"] == "session=h%C3%A9llo%3B%20x%3D1"
        calls = [
            {"name": "echo_get", "arguments": {"X-Note": "héllo"}},
            {"name": "echo_get", "arguments": {"q": "fine"}},
            {"name": "get_file", "arguments": {"file_id": "a" * 900_000}},
        ]
        batch = gw.post("/v1/call/batch", json={"calls": calls}, headers=AGENT)
        assert batch.status_code == 200, batch.text
        results = batch.json()["results"]
        assert [r["ok"] for r in results] == [False, True, False]
        assert [r["error"]["code"] for r in results if r["error"]] == ["invalid_arguments"] * 2


def test_a_path_argument_is_one_path_segment(
    sqlite_db: str, echo: EchoUpstream, tmp_path: Path
) -> None:
    """Before: `..` reached `GET /api/v1?api_key=…` (one level above the operation, with the
    secret) and two `..` arguments climbed above the server's base path."""
    (tmp_path / "key").write_text(API_KEY)
    with app_client(sqlite_db, secret_dirs=(str(tmp_path),)) as gw:
        register(gw, echo, query={"api_key": {"file": str(tmp_path / "key")}})
        before = len(echo.requests)
        for value in ("..", ".", ""):
            refused(call(gw, "get_file", {"file_id": value}), "file_id")
        refused(call(gw, "get_nested_file", {"folder": "..", "file_id": ".."}), "folder")
        assert len(echo.requests) == before  # nothing was sent
        for value in ("%2e%2e", "%2E%2E", "a/../..", "..%2f..", "..\\..", "?x=1#y", "..."):
            answer = call(gw, "get_file", {"file_id": value})
            path = answer["result"]["body"]["path"].split("?")[0]
            segment = path.removeprefix(f"{BASE}/files/")
            assert path.startswith(f"{BASE}/files/") and segment and "/" not in segment, path
        nested = call(gw, "get_nested_file", {"folder": "a b", "file_id": "c/d"})
        assert nested["result"]["body"]["path"].startswith(f"{BASE}/files/a%20b/c%2Fd?")


def leaked_forms(text: str) -> list[str]:
    """The forms of the test's secrets found in ``text``."""
    user_pass = ":".join(BASIC)
    forms = {
        "as is": API_KEY.split(" ")[0],
        "percent-encoded": "KEY%2B%2Fxyz987",
        "lower-case percent": "KEY%2b%2fxyz987",
        "JSON-escaped": json.dumps(API_KEY)[1:-1],
        "base64 user:pass": base64.b64encode(user_pass.encode()).decode(),
        "user:pass": user_pass,
        "password": BASIC[1],
    }
    return [name for name, form in forms.items() if form in text]


def test_secrets_are_masked_in_every_encoding(
    sqlite_db: str, echo: EchoUpstream, tmp_path: Path
) -> None:
    """Before: the echoed path carried `api_key=file-secret-KEY%2B%2Fxyz987`, and the
    decoded Basic credentials came back as they were."""
    (tmp_path / "key").write_text(API_KEY)
    basic = base64.b64encode(":".join(BASIC).encode()).decode()
    (tmp_path / "basic").write_text(basic)
    auth = {"file": str(tmp_path / "basic"), "prefix": "Basic "}
    with app_client(sqlite_db, secret_dirs=(str(tmp_path),)) as gw:
        register(
            gw,
            echo,
            query={"api_key": {"file": str(tmp_path / "key")}},
            headers={"Authorization": auth},
        )
        for name in ("echo_get", "echo_text", "answer_status"):
            arguments = {"code": "503"} if name == "answer_status" else {}
            answer = call(gw, name, arguments)
            sent = echo.requests[-1]
            assert sent["basic"] == ":".join(BASIC) and API_KEY in sent["query"]["api_key"]
            assert leaked_forms(json.dumps(answer)) == [], answer  # each form masked
            assert leaked_forms(json.dumps(answer, ensure_ascii=False)) == []
        echoed = call(gw, "echo_get")["result"]["body"]
        assert echoed["basic"] == echoed["headers"]["Authorization"] == "[secret]"
        assert echoed["path"] == f"{BASE}/echo?api_key=[secret]"


def test_a_secret_that_is_no_header_value_is_refused_by_its_reference(
    database_url: str,
    echo: EchoUpstream,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before: a rotated secret file with an inner newline failed the sync with
    `LocalProtocolError: Illegal header value b'ROTATED-SECRET-2\\nX-Extra: y'`, in the
    answer, in sources.last_error and in GET /v1/sources; a call was `unreachable`."""
    caplog.set_level(logging.DEBUG)
    secret = tmp_path / "token"
    secret.write_text("GOOD-SECRET-1")
    with app_client(database_url, secret_dirs=(str(tmp_path),)) as gw:
        register(gw, echo, headers={"X-Key": {"file": str(secret)}})
        secret.write_text("ROTATED-SECRET-2\nX-Extra: y")
        synced = gw.post("/v1/sources/echo/sync", headers=ADMIN)
        assert synced.status_code == 502
        message = synced.json()["error"]["message"]
        assert str(secret) in message and "line break" in message
        answer = call(gw, "echo_get")
        assert answer["error"]["code"] == "credentials_missing" and answer["attempts"] == 0
        assert str(secret) in answer["error"]["message"]
        for kind, url in (("openapi", f"{echo.url}{BASE}/openapi.json"), ("mcp", echo.url)):
            body = {"name": f"new-{kind}", "kind": kind, "url": url}
            body["headers"] = {"X-Key": {"file": str(secret)}}  # type: ignore[assignment]
            new = gw.post("/v1/sources", json=body, headers=ADMIN)
            assert new.status_code == 502 and str(secret) in new.json()["error"]["message"]
        listed = gw.get("/v1/sources", headers=ADMIN).json()
        assert str(secret) in listed["items"][0]["last_error"]
        engine = services_of(gw).engine
        with engine.connect() as connection:
            stored = [
                row[0] for row in connection.exec_driver_sql("SELECT last_error FROM sources")
            ]
        shown = json.dumps([synced.json(), answer, listed, stored, new.json()])
        assert "ROTATED" not in shown and "GOOD-SECRET" not in shown
        plain = {"name": "plain", "kind": "openapi", "url": f"{echo.url}{BASE}/openapi.json"}
        plain["headers"] = {"X-Plain": "a\r\nb"}  # type: ignore[assignment]
        assert gw.post("/v1/sources", json=plain, headers=ADMIN).status_code == 422
    assert "ROTATED" not in caplog.text and "GOOD-SECRET" not in caplog.text


def test_the_http_librarys_log_lines_lose_the_query(
    sqlite_db: str, echo: EchoUpstream, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """httpx logs every request's URL at INFO; a source's API key is in its query."""
    caplog.set_level(logging.INFO)
    (tmp_path / "key").write_text(API_KEY)
    with app_client(sqlite_db, secret_dirs=(str(tmp_path),)) as gw:
        register(gw, echo, query={"api_key": {"file": str(tmp_path / "key")}})
        assert call(gw, "echo_get")["ok"]
    assert "HTTP Request: GET" in caplog.text and "?[query]" in caplog.text
    assert leaked_forms(caplog.text) == []


TEAM_A, TEAM_B = "team-a-agent-key-0123456789", "team-b-agent-key-0123456789"


def test_a_call_reports_only_on_a_route_of_its_own_namespace(
    database_url: str, echo: EchoUpstream
) -> None:
    """Before: team a called its own tool with team b's route_id, the call became team b's
    report, and team b's own report was then a 409."""
    keys = (AGENT_KEY, f"{TEAM_A}@team-a", f"{TEAM_B}@team-b")
    with app_client(database_url, agent_keys=keys) as gw:
        for team in ("team-a", "team-b"):
            register(gw, echo, name=f"echo-{team}", namespace=team)
        team_a = {"Authorization": f"Bearer {TEAM_A}"}
        team_b = {"Authorization": f"Bearer {TEAM_B}"}
        route = gw.post("/v1/route", json={"query": "read one file"}, headers=team_b).json()
        body = {"name": "get_file", "arguments": {"file_id": "1"}, "route_id": route["route_id"]}
        assert gw.post("/v1/call", json=body, headers=team_a).json()["ok"]
        services_of(gw).events.flush()
        report = {"route_id": route["route_id"], "chosen": "get_file", "outcome": "error"}
        own = gw.post("/v1/feedback", json=report, headers=team_b)
        assert own.status_code == 200, own.text
        assert own.json()["outcome"] == "error" and own.json()["namespace"] == "team-b"
        route = gw.post("/v1/route", json={"query": "read one file"}, headers=team_a).json()
        body["route_id"] = route["route_id"]  # its own route: its report
        assert gw.post("/v1/call", json=body, headers=team_a).json()["ok"]
        services_of(gw).events.flush()
        mine = {**report, "route_id": route["route_id"]}
        again = gw.post("/v1/feedback", json=mine, headers=team_a)
        assert again.status_code == 409  # the call's success stands: it was recorded
