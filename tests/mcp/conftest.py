"""A real server for real MCP clients: the app under uvicorn on a free port, in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.test_route import TOOLS
from tests.conftest import ADMIN, empty_database, make_settings

OTHER = {"tools": [{"name": "ping", "description": "Check that a host answers."}]}
Serve = Callable[..., Any]
APPS: dict[str, Any] = {}  # base URL → the app served there (to flush its event writer)


def flush_events(base: str) -> None:
    """Write what the served app's background writer holds (route events, validated calls)."""
    APPS[base].state.services.events.flush()


@contextmanager
def served(**settings: Any) -> Iterator[str]:
    """The app under uvicorn on 127.0.0.1 and a port the system chose; its base URL."""
    app = create_app(make_settings(**settings), encoder=make_encoder("fake"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    APPS[base] = app
    try:
        yield base
    finally:
        APPS.pop(base, None)
        server.should_exit = True
        thread.join(timeout=30)


def seed(base: str) -> None:
    """The route tests' tools in "default", one tool in "other"."""
    with httpx.Client(base_url=base, headers=ADMIN, timeout=30) as http:
        for body in ({"tools": TOOLS}, {**OTHER, "namespace": "other"}):
            assert http.post("/v1/tools/bulk", json=body).status_code == 200


@pytest.fixture
def serve(sqlite_url: str) -> Iterator[Callable[..., Any]]:
    """``with serve(**settings) as base:``: a seeded server on an emptied SQLite database."""
    empty_database(sqlite_url)

    @contextmanager
    def start(**settings: Any) -> Iterator[str]:
        with served(url=sqlite_url, **settings) as base:
            seed(base)
            yield base

    yield start


@pytest.fixture
def server(serve: Serve) -> Iterator[str]:
    """A seeded server with the test keys and the default host checks."""
    with serve() as base:
        yield base
