"""The card doctor's page in a real Chromium: an admin signs in, sees a finding with its
replay, applies it with the form, and the cards get new versions. Three agent keys report:
bounded influence (trust_keys 3) confirms what they agree on."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.own_postgres import free_port
from tests.api.test_advice import AGENT_KEYS, AGENTS, CARDS, MISROUTED, NS, RIGHT
from tests.conftest import ADMIN, ADMIN_KEY, make_settings
from tests.dashboard.test_dashboard_browser import ARTIFACTS, browser_page
from tests.dashboard.test_dashboard_widths import ACCENT, LAYOUT, WIDTHS

pytestmark = pytest.mark.browser
__all__ = ["browser_page"]


@pytest.fixture
def live_app(tmp_path: Path) -> Iterator[tuple[str, FastAPI]]:
    """The app served by uvicorn in a thread, with three agent keys."""
    settings = make_settings(f"sqlite:///{tmp_path / 'browser.db'}", agent_keys=AGENT_KEYS)
    app = create_app(settings, make_encoder("fake"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port()))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def report(api: httpx.Client, query: str, chosen: str, agent: dict[str, str]) -> None:
    body = {"query": query, "k": 3, "namespace": NS}
    answer = api.post("/v1/route", json=body, headers=agent).json()
    api.post("/v1/feedback", json={"route_id": answer["route_id"], "chosen": chosen}, headers=agent)


def test_apply_advice_in_a_browser(live_app: tuple[str, FastAPI], browser_page: Any) -> None:
    base, app = live_app
    with httpx.Client(base_url=base, timeout=30) as api:
        body = {"namespace": NS, "tools": CARDS}
        assert api.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        for query in MISROUTED:
            for agent in AGENTS:
                report(api, query, "list_orders", agent)
        for query, tool in RIGHT:
            report(api, query, tool, AGENTS[0])
        app.state.services.events.flush()
        [finding] = api.get(f"/v1/advice?namespace={NS}", headers=ADMIN).json()["advice"]
    page = browser_page
    page.goto(f"{base}/dashboard/advice?namespace={NS}")
    page.fill("#key", ADMIN_KEY)
    page.click("button[type=submit]")
    page.wait_for_url(f"**/dashboard/advice?namespace={NS}")
    section = page.locator(f'section[data-advice="{finding["id"]}"]')
    assert "broken 0" in section.locator("p.replay").inner_text()
    section.locator("button.apply").click()
    page.wait_for_url("**/dashboard/advice?namespace=shop&applied=*")
    assert "customer_profile@2" in page.locator("#applied").inner_text()
    with httpx.Client(base_url=base, timeout=30) as api:
        card = api.get(f"/v1/tools/customer_profile?namespace={NS}", headers=ADMIN).json()
    assert card["version"] == 2 and "use list_orders" in card["description"]


def test_the_advice_page_is_styled_like_the_others(
    live_app: tuple[str, FastAPI], browser_page: Any
) -> None:
    """Its namespace is picked in the filter bar, its findings are cards, and its buttons
    are the dashboard's (they were the browser's defaults), at both widths."""
    base, app = live_app
    with httpx.Client(base_url=base, timeout=30) as api:
        body = {"namespace": NS, "tools": CARDS}
        assert api.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        for query in MISROUTED:
            for agent in AGENTS:
                report(api, query, "list_orders", agent)
        for query, tool in RIGHT:
            report(api, query, tool, AGENTS[0])
    app.state.services.events.flush()
    page = browser_page
    page.goto(f"{base}/dashboard/advice?namespace={NS}")
    page.fill("#key", ADMIN_KEY)
    page.click("button[type=submit]")
    page.wait_for_url(f"**/dashboard/advice?namespace={NS}")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        page.screenshot(
            path=str(ARTIFACTS / f"dashboard-{width}-advice-finding.png"), full_page=True
        )
        selected = page.locator("form.filters select[name=namespace] option[selected]")
        assert selected.get_attribute("value") == NS
        finding = page.locator("section.finding").first
        assert "card" in (finding.get_attribute("class") or "")
        for button in ("form.filters button[type=submit]", "button.apply"):
            color = page.locator(button).first.evaluate("b => getComputedStyle(b).backgroundColor")
            assert color == ACCENT, (button, color)
        heading = finding.locator("h2").bounding_box()
        apply = finding.locator("button.apply").bounding_box()
        assert heading is not None and apply is not None
        assert apply["y"] >= heading["y"] + heading["height"]  # below the heading, not on it
        assert page.evaluate(LAYOUT) == []
