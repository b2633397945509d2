"""Every dashboard page in a real Chromium at a laptop's 1,366 px and a phone's 390 px, over a
real API's catalog (issue 42 items 13, 14, 15).

Before: with Twilio Messaging's tags the registry's table was wider than the window at
1,366 px (tags did not wrap); at 390 px the navigation links were squeezed out of sight,
tables ran out of their cards, a long step wrapped one word a line and stat labels were cut
("FEEDBA…"); the advice page was unstyled. Each page is checked for: nothing wider than the
window, every navigation link visible and on top, every table inside its card (at 390 px it
may scroll inside it), tags inside their cell, stat labels whole, a step's cell wide enough
to read. Screenshots go to artifacts/dashboard-{width}-{page}.png.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.conftest import ADMIN, ADMIN_KEY, AGENT
from tests.dashboard.seed import seed
from tests.dashboard.test_dashboard_browser import ARTIFACTS, browser_page, live_app
from tests.shared_data import shared_file

pytestmark = pytest.mark.browser
__all__ = ["browser_page", "live_app"]

WIDTHS = (1366, 390)
ACCENT = "rgb(37, 99, 235)"  # the dashboard's buttons (--accent)
LONG_STEP = (
    "please send the verification code by text message to the customer who just signed up "
    "with the number +14155550100 and tell them it expires in ten minutes"
)
PAGES = {
    "overview": "/dashboard?range=all",
    "tools": "/dashboard/tools?range=all",
    "misroutes": "/dashboard/misroutes?range=all",
    "lookalikes": "/dashboard/lookalikes?threshold=0.5&range=all",
    "registry": "/dashboard/registry?namespace=twilio",
    "registry-all": "/dashboard/registry",
    "card": "/dashboard/registry/twilio/FetchLinkshorteningMessagingServiceDomainAssociation",
    "advice": "/dashboard/advice?namespace=twilio",
    "not-found": "/dashboard?namespace=twillio",
}

LAYOUT = r"""() => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  const name = (el) => {
    const cls = typeof el.className === "string" ? el.className.trim() : "";
    return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (cls ? "." + cls.split(/\s+/).join(".") : "");
  };
  const scroller = (el) => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      const x = getComputedStyle(up).overflowX;
      if (x === "auto" || x === "scroll" || x === "hidden") return up;
    }
    return null;
  };
  if (document.documentElement.scrollWidth > width + 1)
    problems.push(`the page is ${document.documentElement.scrollWidth} px wide in ${width}`);
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (!r.width || scroller(el)) continue;
    if (r.right > width + 1 || r.left < -1) {
      problems.push(`${name(el)} spans ${Math.round(r.left)}..${Math.round(r.right)} of ${width}`);
      break;
    }
  }
  for (const link of document.querySelectorAll("header.top nav a")) {
    const r = link.getBoundingClientRect();
    const top = r.width && document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!r.width || r.left < 0 || r.right > width + 1 || !(top === link || link.contains(top)))
      problems.push(`the navigation link ${link.textContent} is not visible`);
  }
  for (const table of document.querySelectorAll("main table")) {
    const card = table.closest(".card, section") || document.querySelector("main");
    const [t, c] = [table.getBoundingClientRect(), card.getBoundingClientRect()];
    if (t.right > c.right + 1)
      problems.push(`${name(table)} ends at ${t.right} past its card ${c.right}`);
    if (width > 1000 && table.scrollWidth > table.clientWidth + 1)
      problems.push(`${name(table)} scrolls at ${width} px`);
  }
  for (const chip of document.querySelectorAll("main td .chip")) {
    const [r, cell] = [chip.getBoundingClientRect(), chip.closest("td").getBoundingClientRect()];
    if (r.right > cell.right + 1) {
      problems.push(`the tag ${chip.textContent} leaves its cell`);
      break;
    }
  }
  for (const label of document.querySelectorAll(".tile .label"))
    if (label.scrollWidth > label.clientWidth + 1)
      problems.push(`the label ${label.textContent} is cut`);
  for (const cell of document.querySelectorAll("td.query"))
    if (cell.getBoundingClientRect().width < 160) {
      problems.push(`a step's cell is ${Math.round(cell.getBoundingClientRect().width)} px wide`);
      break;
    }
  return problems;
}"""


def seeded(base: str, app: FastAPI) -> None:
    """The scripted stats, Twilio Messaging's 58 operations, a long step misrouted there."""
    services = app.state.services
    document = shared_file("openapi", "twilio-messaging-v1.json")
    source = {"name": "tw", "kind": "openapi", "namespace": "twilio", "path": str(document)}
    with httpx.Client(base_url=base, timeout=60) as api:
        seed(api, services.events.flush)
        assert api.post("/v1/sources", json=source, headers=ADMIN).status_code == 201
        body = {"query": LONG_STEP, "k": 3, "namespace": "twilio"}
        routed = api.post("/v1/route", json=body, headers=AGENT).json()
        chosen = "FetchLinkshorteningMessagingServiceDomainAssociation"
        report = {"route_id": routed["route_id"], "chosen": chosen, "outcome": "success"}
        assert api.post("/v1/feedback", json=report, headers=AGENT).status_code == 200
    services.events.flush()
    services.lookalikes.refresh()


def test_every_page_fits_a_laptop_and_a_phone(
    live_app: tuple[str, FastAPI], browser_page: Any
) -> None:
    base, app = live_app
    seeded(base, app)
    page = browser_page
    found: dict[str, list[str]] = {}
    for width in WIDTHS:  # the sign-in form too
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{base}/dashboard/login")
        if problems := page.evaluate(LAYOUT):
            found[f"{width} login"] = problems
    page.fill("#key", ADMIN_KEY)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/dashboard*")
    ARTIFACTS.mkdir(exist_ok=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        for key, path in PAGES.items():
            response = page.goto(f"{base}{path}")
            assert response is not None
            assert response.status == (404 if key == "not-found" else 200), (key, width)
            page.screenshot(path=str(ARTIFACTS / f"dashboard-{width}-{key}.png"), full_page=True)
            problems = page.evaluate(LAYOUT)
            if problems:
                found[f"{width} {key}"] = problems
    assert found == {}, json.dumps(found, indent=1)
