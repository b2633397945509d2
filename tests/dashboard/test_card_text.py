"""A card's text as its publisher wrote it (issue 42 items 11 and 12).

Before: an OpenAPI operation whose description repeats its summary (common in real APIs:
Twilio's "Retrieve a tollfree verification" twice) was imported as "summary\n\ndescription",
so its card page showed the sentence three times (the summary, then the description that
held it twice) and exports twice. Markdown links in parameter descriptions
(`[E.164](https://…)`) showed raw. Now each text is said once, and links are links: only to
http(s), escaped, opening no window the page could be reached from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import ADMIN, AGENT, empty_database
from tests.dashboard.conftest import dashboard_client, sign_in
from tests.shared_data import shared_file

E164 = "The recipient, in [E.164](https://www.twilio.com/docs/glossary/what-e164) format."
HOSTILE = (
    "Not a link: [click](javascript:alert(1)), [x](data:text/html,hi), "
    '[q"><script>alert(1)</script>](https://example.com/"onmouseover="alert(1))'
)


def document() -> dict[str, Any]:
    def operation(op_id: str, summary: str, description: str) -> dict[str, Any]:
        return {
            "operationId": op_id,
            "summary": summary,
            "description": description,
            "requestBody": {
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "To": {"type": "string", "description": E164},
                                "Note": {"type": "string", "description": HOSTILE},
                            },
                        }
                    }
                }
            },
            "responses": {"200": {"description": "ok"}},
        }

    return {
        "openapi": "3.0.3",
        "info": {"title": "Messages", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/messages": {"post": operation("CreateMessage", "Send a message", "Send a message")},
            "/calls": {
                "post": operation(
                    "CreateCall", "Place a call.", "Place a call. It rings the number given."
                )
            },
        },
    }


@pytest.fixture
def client(sqlite_url: str, tmp_path: Path) -> Iterator[TestClient]:
    empty_database(sqlite_url)
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(document()))
    with dashboard_client(sqlite_url) as test_client:
        body = {"name": "msg", "kind": "openapi", "namespace": "msg", "path": str(path)}
        response = test_client.post("/v1/sources", json=body, headers=ADMIN)
        assert response.status_code == 201, response.text
        sign_in(test_client)
        yield test_client


def card(client: TestClient, name: str) -> dict[str, Any]:
    response = client.get(f"/v1/tools/{name}", params={"namespace": "msg"}, headers=AGENT)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def test_a_description_that_repeats_the_summary_is_imported_once(client: TestClient) -> None:
    sent = card(client, "CreateMessage")
    assert (sent["summary"], sent["description"]) == ("Send a message", "Send a message")
    call = card(client, "CreateCall")
    assert call["description"] == "Place a call. It rings the number given."
    for fmt in ("openai", "anthropic", "mcp"):
        exported = client.get(
            "/v1/tools", params={"namespace": "msg", "format": fmt}, headers=AGENT
        ).text
        assert exported.count("Send a message") == 1, (fmt, exported)
        assert exported.count("Place a call") == 1, (fmt, exported)


def main_text(client: TestClient, name: str) -> str:
    response = client.get(f"/dashboard/registry/msg/{name}")
    assert response.status_code == 200, response.text
    html = response.text
    return html[html.index("<main") : html.index("Full schema")]


def test_the_card_page_says_each_text_once(client: TestClient) -> None:
    assert main_text(client, "CreateMessage").count("Send a message") == 1
    page = main_text(client, "CreateCall")
    assert page.count("Place a call") == 1
    assert "It rings the number given." in page


def test_markdown_links_are_links_and_nothing_else_is(client: TestClient) -> None:
    page = main_text(client, "CreateMessage")
    link = (
        '<a href="https://www.twilio.com/docs/glossary/what-e164" '
        'rel="noopener noreferrer nofollow" class="external">E.164</a>'
    )
    assert f"The recipient, in {link} format." in page
    assert "javascript:alert" in page and 'href="javascript' not in page
    assert 'href="data:' not in page
    assert "<script>" not in page and 'onmouseover="' not in page


def test_a_card_imported_before_says_its_summary_once_too(client: TestClient) -> None:
    """A card stored as "summary\\n\\nsummary" (imported before the fix) shows it once."""
    old = {"summary": "Fetch a number", "description": "Fetch a number\n\nFetch a number"}
    put = client.put("/v1/tools/FetchNumber", json={**old, "namespace": "msg"}, headers=ADMIN)
    assert put.status_code == 201, put.text
    assert main_text(client, "FetchNumber").count("Fetch a number") == 1


def test_in_a_real_api_no_card_repeats_its_summary(client: TestClient) -> None:
    path = shared_file("openapi", "twilio-messaging-v1.json")
    body = {"name": "tw", "kind": "openapi", "namespace": "tw", "path": str(path)}
    assert client.post("/v1/sources", json=body, headers=ADMIN).status_code == 201
    tools = client.get("/v1/tools", params={"namespace": "tw", "limit": 100}, headers=AGENT)
    items = tools.json()["items"]
    assert len(items) == 58
    repeated = [
        t["name"] for t in items if t["summary"] and t["description"].count(t["summary"]) > 1
    ]
    assert repeated == []
