"""Fixtures of the dashboard tests: an app with a dashboard key, signed-in clients, HTML reading."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.keys.store import ENVIRONMENT_PREFIX, KeyRecord, digest
from app.main import create_app
from tests.conftest import ADMIN_KEY, make_settings

VIEWER_KEY = "test-dashboard-key-0123456789"


def dashboard_client(database_url: str) -> TestClient:
    """A client of an app with admin, agent and dashboard keys, over https (Secure cookies)."""
    settings = make_settings(database_url, dashboard_keys=(VIEWER_KEY,))
    app = create_app(settings, encoder=make_encoder("fake"))
    return TestClient(app, base_url="https://testserver", raise_server_exceptions=False)


def environment_key(key: str, role: str = "dashboard") -> KeyRecord:
    """The record the service makes of ``key`` set in the environment (unscoped)."""
    hashed = digest(key)
    return KeyRecord(f"{ENVIRONMENT_PREFIX}{hashed[:12]}", role, None, hashed, True)  # type: ignore[arg-type]


def sign_in(client: TestClient, key: str = ADMIN_KEY) -> None:
    response = client.post("/dashboard/login", data={"key": key}, follow_redirects=False)
    assert response.status_code == 303, response.text


@pytest.fixture
def anonymous(database_url: str) -> Iterator[TestClient]:
    with dashboard_client(database_url) as client:
        yield client


@pytest.fixture
def viewer(database_url: str) -> Iterator[TestClient]:
    """Signed in with the read-only dashboard key."""
    with dashboard_client(database_url) as client:
        sign_in(client, VIEWER_KEY)
        yield client


class Elements(HTMLParser):
    """Every element's attributes, by id, and every link target, from a page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.by_id: dict[str, dict[str, str]] = {}
        self.links: list[str] = []
        self.rows: list[dict[str, str]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if "id" in values:
            self.by_id[values["id"]] = values
        if tag == "a" and "href" in values:
            self.links.append(values["href"])
        if tag in ("tr", "td"):
            self.rows.append({"tag": tag, **values})


def data_value(page: Elements, element_id: str) -> str:
    return page.by_id[element_id]["data-value"]
