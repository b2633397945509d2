"""The advice page (issue 38 item 9): its apply error page is escaped like every other page
(the advice id and the posted namespace were reflected raw: a ``<meta http-equiv=refresh>``
survived), and a namespace the viewer may not see reads as one that does not exist."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.conftest import ADMIN
from tests.dashboard.conftest import dashboard_client, sign_in

# No "/" in the id: it is one path segment.
REFRESH = '<meta http-equiv="refresh" content="0;url=https:evil.example">'
SCRIPT = "<img src=x onerror=alert(1)>"


def test_the_apply_error_page_is_escaped(database_url: str) -> None:
    with dashboard_client(database_url) as client:
        tools = {"tools": [{"name": "ping", "description": "Checks liveness."}]}
        assert client.post("/v1/tools/bulk", json=tools, headers=ADMIN).status_code == 200
        sign_in(client)
        hostile_id = f"{SCRIPT}{REFRESH}"
        for namespace in ("default", REFRESH):
            answer = client.post(
                f"/dashboard/advice/{hostile_id}/apply",
                data={"namespace": namespace},
                headers={"Sec-Fetch-Site": "same-origin"},
                follow_redirects=False,
            )
            assert answer.status_code in (404, 409), answer.text
            assert answer.headers["content-type"].startswith("text/html")
            for raw in ("<meta http-equiv", "<img src=x", 'content="0;url'):
                assert raw not in answer.text.lower(), (namespace, raw)
            assert "&lt;" in answer.text  # shown, escaped


def test_a_namespace_out_of_sight_reads_as_missing(database_url: str) -> None:
    """A viewer scoped to ``other`` asking for ``default``'s advice sees the same page as
    for a namespace that never existed."""
    from app.embedding.encoders import make_encoder
    from app.main import create_app
    from tests.conftest import make_settings

    key = "test-dashboard-scoped-0123456789"
    settings = make_settings(database_url, dashboard_keys=(f"{key}@other",))
    app = create_app(settings, encoder=make_encoder("fake"))
    with TestClient(app, base_url="https://testserver", raise_server_exceptions=False) as client:
        tools = {"namespace": "other", "tools": [{"name": "ping", "description": "Liveness."}]}
        assert client.post("/v1/tools/bulk", json=tools, headers=ADMIN).status_code == 200
        sign_in(client, key)
        hidden = client.get("/dashboard/advice?namespace=default")
        missing = client.get("/dashboard/advice?namespace=nowhere")
        assert hidden.status_code == missing.status_code == 200
        assert "unknown namespace &#39;default&#39;" in hidden.text
        assert hidden.text.replace("default", "X").count("unknown namespace") == 1
        assert missing.text.replace("nowhere", "default") == hidden.text
