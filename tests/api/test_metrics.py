"""GET /metrics: the named series, on a registry per app, with no query text in it."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.loop_support import VIEWER, services_of
from tests.conftest import AGENT, make_settings

SERIES = (
    "toolreach_route_duration_seconds_bucket",
    'toolreach_route_stage_duration_seconds_count{stage="embed"} 1.0',
    'toolreach_route_stage_duration_seconds_count{stage="rank"} 1.0',
    'toolreach_routes_total{namespace="default",result="candidates"} 1.0',
    'toolreach_feedback_total{namespace="default",outcome="error",verdict="hit_at_1"} 1.0',
    'toolreach_index_tools{namespace="default"} 4.0',
    'toolreach_index_tools{namespace="other"} 1.0',
    "toolreach_route_events_dropped_total 0.0",
    "toolreach_route_events_buffered 0.0",
)


def test_metrics_expose_the_named_series(loop: TestClient) -> None:
    query = {"query": "the weather in Trondheim please", "k": 2}
    answer = loop.post("/v1/route", json=query, headers=AGENT).json()
    feedback = {"route_id": answer["route_id"], "chosen": answer["candidates"][0]["name"]}
    loop.post("/v1/feedback", json={**feedback, "outcome": "error"}, headers=AGENT)
    loop.post("/v1/feedback", json={**feedback, "outcome": "error"}, headers=AGENT)  # a repeat
    services_of(loop).events.flush()
    response = loop.get("/metrics")  # open by default
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    for series in SERIES:
        assert series in response.text, series
    assert "Trondheim" not in response.text
    assert "get_weather" not in response.text


def test_namespaces_without_tools_share_one_label(loop: TestClient) -> None:
    """Any agent may name any namespace: a label per invented name was a series each. An
    invented one is a 404 (never counted); one whose tools are all gone shares a label."""
    from tests.conftest import ADMIN

    for i in range(3):
        body = {"query": "weather", "namespace": f"junk_{i}"}
        assert loop.post("/v1/route", json=body, headers=AGENT).status_code == 404
        card = {"name": "gone", "description": "Soon deleted.", "namespace": f"emptied_{i}"}
        assert loop.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
        gone = loop.delete(f"/v1/tools/gone?namespace=emptied_{i}", headers=ADMIN)
        assert gone.status_code == 204
        body = {"query": "weather", "namespace": f"emptied_{i}"}
        assert loop.post("/v1/route", json=body, headers=AGENT).status_code == 200
    text = loop.get("/metrics").text
    assert "junk_" not in text and 'routes_total{namespace="emptied_' not in text
    assert 'toolreach_routes_total{namespace="(no tools)",result="empty"} 3.0' in text


def test_metrics_can_require_a_viewer_key(database_url: str) -> None:
    settings = make_settings(
        database_url, metrics_public=False, dashboard_keys=(VIEWER["Authorization"][7:],)
    )
    with TestClient(create_app(settings, encoder=make_encoder("fake"))) as client:
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers=AGENT).status_code == 403
        assert client.get("/metrics", headers=VIEWER).status_code == 200


def test_a_namespace_whose_tools_were_all_deleted_counts_as_no_tools(loop: TestClient) -> None:
    from tests.conftest import ADMIN

    card = {"name": "solo_tool", "description": "The only one.", "namespace": "solo"}
    assert loop.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
    assert loop.delete("/v1/tools/solo_tool?namespace=solo", headers=ADMIN).status_code == 204
    loop.post("/v1/route", json={"query": "anything", "namespace": "solo"}, headers=AGENT)
    text = loop.get("/metrics").text
    assert 'toolreach_routes_total{namespace="solo"' not in text
