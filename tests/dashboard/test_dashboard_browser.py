"""The dashboard in a real Chromium: sign in, read the numbers, follow a misroute to its card.

Runs a uvicorn server in a thread on a free 127.0.0.1 port over a SQLite file seeded through
the real API, and keeps a screenshot of the overview in ``artifacts/dashboard.png``.
"""

from __future__ import annotations

import socket
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
from tests.conftest import ADMIN, make_settings
from tests.dashboard.conftest import VIEWER_KEY
from tests.dashboard.seed import Seeded, seed

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
HEADLINE = ("routes", "feedback", "hit_at_1", "hit_at_k", "miss", "none_fit", "success")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

pytestmark = pytest.mark.browser


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def live_app(tmp_path: Path) -> Iterator[tuple[str, FastAPI]]:
    """The app served by uvicorn in a thread; yields its base URL and the app."""
    url = f"sqlite:///{tmp_path / 'browser.db'}"
    app = create_app(make_settings(url, dashboard_keys=(VIEWER_KEY,)), make_encoder("fake"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def browser_page() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}: the browser test needs it "
            "(apt-get install chromium fonts-wqy-zenhei)",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def numbers_on(page: Any) -> dict[str, str]:
    return {
        key: page.get_attribute(f"#stat-{key}", "data-value")
        for key in (*HEADLINE, "dropped_events")
    }


def test_the_dashboard_in_a_browser(live_app: tuple[str, FastAPI], browser_page: Any) -> None:
    base, app = live_app
    with httpx.Client(base_url=base, timeout=30) as api:
        seeded: Seeded = seed(api, app.state.services.events.flush)
        stats = api.get("/v1/stats", headers=ADMIN).json()
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # console errors include failed loads, e.g. the /favicon.ico asked for when no icon is named
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)

    page.goto(f"{base}/dashboard?range=all&bucket=day")
    assert "/dashboard/login" in page.url  # not signed in yet
    page.fill("#key", VIEWER_KEY)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/dashboard?range=all&bucket=day")

    assert numbers_on(page) == {k: str(stats[k]) for k in (*HEADLINE, "dropped_events")}
    assert {k: stats[k] for k in HEADLINE} == seeded.expected
    assert page.locator("svg.chart").count() >= 3
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)

    page.click("nav >> text=Confusions & misroutes")
    newest = stats["misroutes"][0]
    row = page.locator(f'tr[data-route-id="{newest["route_id"]}"]')
    assert row.locator("td.query").inner_text() == newest["query"]
    assert row.locator("ol.candidates a").all_inner_texts() == newest["candidates"]
    row.locator("a.tool.chosen").click()
    page.wait_for_url(f"**/dashboard/registry/{newest['namespace']}/{newest['chosen']}")
    assert page.get_attribute("#card-name", "data-name") == newest["chosen"]
    page.screenshot(path=str(ARTIFACTS / "dashboard-card.png"), full_page=True)

    page.click("button:text('Sign out')")
    page.wait_for_url("**/dashboard/login")
    page.goto(f"{base}/dashboard")
    assert "/dashboard/login" in page.url
    assert errors == []
    assert console == []
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000


# Laid out in the 1,366 px window the dashboard is drawn for: nothing wider than the window,
# and nothing wider than the card (section) that holds it.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const page = document.documentElement.scrollWidth;
  const out = [];
  for (const box of document.querySelectorAll("main section.card, main table, main ul, main p")) {
    const holder = box.closest("section.card") || document.querySelector("main");
    const inner = holder.getBoundingClientRect();
    for (const item of box.querySelectorAll("*")) {
      const r = item.getBoundingClientRect();
      if (r.width && r.right > inner.right + 1) {
        const where = `${item.tagName}.${item.className}`;
        out.push(`${where} ends at ${Math.round(r.right)} > ${Math.round(inner.right)}`);
        break;
      }
    }
  }
  const table = document.querySelector("table")?.getBoundingClientRect().width ?? 0;
  return {width, page, table, out};
}"""


def signed_in(page: Any, base: str) -> None:
    page.goto(f"{base}/dashboard/login")
    page.fill("#key", VIEWER_KEY)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/dashboard*")


def test_wide_pages_fit_the_window(live_app: tuple[str, FastAPI], browser_page: Any) -> None:
    """The look-alikes table was 1,877 px wide in a 1,366 px window (Differing fields and
    Hint off-screen), and a card's query memory ran out of its box."""
    base, app = live_app
    services = app.state.services
    long_name = "get_the_current_weather_conditions_for_one_city_right_now_in_metric_units"
    alike = {
        "name": long_name,
        "description": "Current weather for a city right now: temperature, wind, humidity.",
        "parameters": {
            "type": "object",
            "properties": {"city_name_as_the_user_wrote_it": {"type": "string"}},
        },
        "tags": ["weather", "current-conditions", "temperature", "humidity", "wind-speed"],
    }
    with httpx.Client(base_url=base, timeout=30) as api:
        seed(api, services.events.flush)
        assert api.post("/v1/tools", json=alike, headers=ADMIN).status_code == 201
        step = "weather right now in Oslo " + "and its humidity and wind " * 6
        routed = api.post("/v1/route", json={"query": step, "k": 2}, headers=ADMIN).json()
        report = {"route_id": routed["route_id"], "chosen": long_name, "outcome": "success"}
        assert api.post("/v1/feedback", json=report, headers=ADMIN).status_code == 200
    services.events.flush()
    services.lookalikes.refresh()
    assert services.memory is not None
    services.memory.refresh()
    page = browser_page
    signed_in(page, base)
    page.goto(f"{base}/dashboard/lookalikes?threshold=0.5&range=all")
    assert page.locator("#lookalikes tbody tr").count() >= 2
    laid = page.evaluate(OVERFLOW)
    assert laid["page"] <= laid["width"] == 1366 - scrollbar(page), laid
    assert laid["table"] <= laid["width"] and laid["out"] == [], laid
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-lookalikes.png"), full_page=True)
    hint = page.locator("#lookalikes th:text('Hint')").bounding_box()
    assert hint is not None and hint["x"] + hint["width"] <= laid["width"]
    page.goto(f"{base}/dashboard/registry/default/{long_name}")
    assert page.locator("#tool-memory li").count() >= 1
    laid = page.evaluate(OVERFLOW)
    assert laid["page"] <= laid["width"] and laid["out"] == [], laid


def scrollbar(page: Any) -> int:
    """The width a vertical scrollbar takes from the window (0 in headless Chromium)."""
    return int(page.evaluate("() => window.innerWidth - document.documentElement.clientWidth"))
