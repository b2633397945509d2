"""What the README says of `/v1/stats` after a call (issue 42 item 7): counts appear once
the background writer has written the events, about `TOOLREACH_EVENT_FLUSH_SECONDS` later;
read at once, a new user saw 0 routes and thought the call was lost."""

from __future__ import annotations

import re
import time
from pathlib import Path

from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from app.settings import Settings
from tests.conftest import ADMIN, AGENT, empty_database, make_settings

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_says_when_stats_count_a_call() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    said = re.search(r"`GET /v1/stats\?namespace=shop` \(admin key\) counts it ([^.]*)", readme)
    assert said is not None
    assert "TOOLREACH_EVENT_FLUSH_SECONDS" in said.group(1), said.group(1)
    assert "about a second later" in said.group(1), said.group(1)
    default = Settings.model_fields["event_flush_seconds"].default
    assert default == 1.0  # "about a second"


def test_stats_count_a_route_after_the_flush_not_at_once(sqlite_url: str) -> None:
    empty_database(sqlite_url)
    settings = make_settings(sqlite_url, event_flush_seconds=2.0, load_demo=True)
    with TestClient(create_app(settings, encoder=make_encoder("fake"))) as client:
        routed = client.post("/v1/route", json={"query": "where is my parcel?"}, headers=AGENT)
        assert routed.status_code == 200, routed.text
        at_once = client.get("/v1/stats", headers=ADMIN).json()["routes"]
        deadline, later = time.monotonic() + 10, 0
        while later == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            later = client.get("/v1/stats", headers=ADMIN).json()["routes"]
    assert (at_once, later) == (0, 1)
