"""Bounded schema fuzzing: Schemathesis generates requests from the app's own OpenAPI document
and sends them over real HTTP to the app under uvicorn, on a real Postgres, with an admin key
(so writes are exercised). Every answer must be no 5xx, conform to the documented schema
(status, content type, headers, body), and every error must be in the one error shape.

Valid requests (positive mode) and invalid ones (negative mode) are generated; the seed is
fixed (``derandomize``) and the examples per operation and mode bounded, so a run is the same
run every time and takes ~35 s on two busy cores; the long run is a command in
docs/BENCHMARKS.md ("Schema fuzzing")."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.test_route import TOOLS
from tests.conftest import ADMIN, empty_database, make_settings

pytestmark = pytest.mark.postgres

EXAMPLES = 20  # per operation and mode: ~22 operations, ~40 s in all on 2 loaded cores
CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# Not JSON APIs: the dashboard's pages and forms, the MCP endpoint (its own protocol, tested
# with real MCP clients in tests/mcp), the Prometheus text.
SKIPPED = ("/dashboard", "/mcp", "/metrics")
# Registering a source reads it from the URL given: generated host names would be looked up in
# the DNS, from a test. Its validation is tested in tests/sources and tests/api.
SKIPPED_OPERATIONS = {"POST /v1/sources"}


@pytest.fixture(scope="module")
def base_url(postgres_url: str) -> Iterator[str]:
    """The app under uvicorn on a free port, on an emptied Postgres holding the route tests'
    tools."""
    empty_database(postgres_url)
    app = create_app(make_settings(postgres_url), encoder=make_encoder("fake"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    seeded = requests.post(f"{base}/v1/tools/bulk", json={"tools": TOOLS}, headers=ADMIN)
    assert seeded.status_code == 200, seeded.text
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def operations(base: str) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    found = [result.ok() for result in schema.get_all_operations()]
    return [
        op for op in found if not op.path.startswith(SKIPPED) and op.label not in SKIPPED_OPERATIONS
    ]


def check_no_server_error(response: Any) -> None:
    """No 5xx: the service's own failures are bugs. A source that failed is a 502, the
    gateway's documented answer (a call to a tool whose source cannot be reached)."""
    if response.status_code == 502:
        assert response.json()["error"]["code"] == "source_failed", response.text
    else:
        assert response.status_code < 500, response.text


def check_error_shape(response: Any) -> None:
    """An error is ``{"error": {"code", "message", "details"}}`` and nothing else."""
    if response.status_code < 400:
        return
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.startswith("application/json"), response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    assert isinstance(body["error"]["code"], str) and isinstance(body["error"]["message"], str)


def fuzz(operation: Any, mode: GenerationMode, base: str, session: requests.Session) -> None:
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: Any) -> None:
        response = case.call(base_url=base, session=session, headers=ADMIN, timeout=30)
        check_no_server_error(response)
        case.validate_response(response, checks=CHECKS, headers=ADMIN)
        check_error_shape(response)

    one()


def test_every_operation_survives_bounded_fuzzing(base_url: str) -> None:
    ops = operations(base_url)
    assert len(ops) > 20, [op.label for op in ops]
    failed: list[str] = []
    with requests.Session() as session:
        for operation in ops:
            try:
                for mode in GenerationMode:
                    try:
                        fuzz(operation, mode, base_url, session)
                    except Unsatisfiable:  # nothing to make invalid (no parameters, no body)
                        assert mode == GenerationMode.NEGATIVE
            except (Exception, BaseExceptionGroup) as exc:  # every operation runs; all reported
                failed.append(f"{operation.label}: {exc}")
    assert not failed, "\n\n".join(failed)
