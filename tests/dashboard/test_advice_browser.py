"""The card doctor's page in a real Chromium: an admin signs in, sees a finding with its
replay, applies it with the form, and the cards get new versions."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.api.test_advice import CARDS, MISROUTED, NS, RIGHT
from tests.conftest import ADMIN, ADMIN_KEY, AGENT
from tests.dashboard.test_dashboard_browser import browser_page, live_app

pytestmark = pytest.mark.browser
__all__ = ["browser_page", "live_app"]


def report(api: httpx.Client, query: str, chosen: str) -> None:
    body = {"query": query, "k": 3, "namespace": NS}
    answer = api.post("/v1/route", json=body, headers=AGENT).json()
    api.post("/v1/feedback", json={"route_id": answer["route_id"], "chosen": chosen}, headers=AGENT)


def test_apply_advice_in_a_browser(live_app: tuple[str, FastAPI], browser_page: Any) -> None:
    base, app = live_app
    with httpx.Client(base_url=base, timeout=30) as api:
        body = {"namespace": NS, "tools": CARDS}
        assert api.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        for query in MISROUTED:
            report(api, query, "list_orders")
        for query, tool in RIGHT:
            report(api, query, tool)
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
