"""`GET /` (issue 42 item 4): it was a JSON 404. A browser is sent to the dashboard; a
client gets the API's entry points, each of which answers."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.conftest import AGENT

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"  # Chromium's


def test_a_browser_is_sent_to_the_dashboard(client: TestClient) -> None:
    response = client.get("/", headers={"Accept": BROWSER}, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/dashboard"
    page = client.get("/", headers={"Accept": BROWSER})
    assert page.status_code == 200 and "<form" in page.text  # the dashboard's sign-in


def test_a_client_gets_the_entry_points(client: TestClient) -> None:
    for accept in ("*/*", "application/json"):
        response = client.get("/", headers={"Accept": accept})
        assert response.status_code == 200, response.text
        index = response.json()
        assert index["docs"] == "/docs" and index["openapi"] == "/openapi.json"
        assert {"/v1/route", "/v1/validate", "/v1/tools", "/v1/call"} <= set(index["api"])
    for path in (index["docs"], index["openapi"], *index["health"]):
        assert client.get(path, headers=AGENT).status_code == 200, path
    assert client.head("/").status_code == 200
