"""The pages over seeded data: their numbers equal /v1/stats, user text is escaped, links work."""

from __future__ import annotations

import html as html_text
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.dashboard import pages, registry_pages
from app.dashboard.pages import TOOL_COLUMNS
from tests.conftest import ADMIN
from tests.dashboard.conftest import Elements, dashboard_client, data_value, sign_in
from tests.dashboard.seed import XSS_DESCRIPTION, XSS_QUERY, Seeded, seed

HEADLINE = ("routes", "feedback", "hit_at_1", "hit_at_k", "miss", "none_fit", "success")


@pytest.fixture
def seeded(database_url: str) -> Iterator[tuple[TestClient, Seeded]]:
    """A signed-in admin over the scripted tools, routes and feedback."""
    with dashboard_client(database_url) as client:
        data = seed(client, client.app.state.services.events.flush)  # type: ignore[attr-defined]
        sign_in(client)
        yield client, data


def v1_stats(client: TestClient, **params: str) -> dict[str, Any]:
    response = client.get("/v1/stats", params=params, headers=ADMIN)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def page(client: TestClient, url: str, **params: str) -> tuple[str, Elements]:
    response = client.get(url, params=params)
    assert response.status_code == 200, response.text
    return response.text, Elements(response.text)


def test_overview_numbers_equal_v1_stats(seeded: tuple[TestClient, Seeded]) -> None:
    client, data = seeded
    stats = v1_stats(client)
    assert {k: stats[k] for k in HEADLINE} == data.expected
    _, overview = page(client, "/dashboard", range="all", bucket="day")
    for key in (*HEADLINE, "dropped_events"):
        assert data_value(overview, f"stat-{key}") == str(stats[key]), key
    for key, rate in stats["rates"].items():
        assert data_value(overview, f"stat-rate-{key}") == ("" if rate is None else str(rate))
    for key, ms in stats["latency_ms"].items():
        assert float(data_value(overview, f"stat-latency-{key}")) == ms


def test_filters_reach_the_numbers(seeded: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded
    team = v1_stats(client, namespace="team-b")
    assert team["routes"] == 3
    _, overview = page(client, "/dashboard", range="all", namespace="team-b", bucket="hour")
    for key in HEADLINE:
        assert data_value(overview, f"stat-{key}") == str(team[key])
    _, future = page(client, "/dashboard", since="2999-01-01", until="2999-01-02")
    assert data_value(future, "stat-routes") == "0"
    as_json = client.get("/dashboard/stats.json", params={"range": "all", "namespace": "team-b"})
    assert {k: as_json.json()[k] for k in HEADLINE} == {k: team[k] for k in HEADLINE}


def test_tools_table_equals_v1_stats(seeded: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded
    expected = {f"{t['namespace']}/{t['name']}": t for t in v1_stats(client)["tools"]}
    _, tools = page(client, "/dashboard/tools", range="all")
    rows = rows_of(tools)
    assert set(rows) == set(expected)
    for tool, cells in rows.items():
        for column, value in cells.items():
            assert int(value) == expected[tool][column], (tool, column)


def rows_of(page: Elements) -> dict[str, dict[str, str]]:
    """{namespace/name: {column: data-value}} of the tools table, in page order."""
    rows: dict[str, dict[str, str]] = {}
    current = ""
    for element in page.rows:
        if element["tag"] == "tr" and "data-tool" in element:
            current = element["data-tool"]
            rows[current] = {}
        elif element["tag"] == "td" and "data-col" in element and current:
            rows[current][element["data-col"]] = element["data-value"]
    return rows


@pytest.mark.parametrize("column", list(TOOL_COLUMNS))
def test_tools_sort_by_every_column(seeded: tuple[TestClient, Seeded], column: str) -> None:
    client, _ = seeded
    stats = {f"{t['namespace']}/{t['name']}": t for t in v1_stats(client)["tools"]}
    for direction in ("asc", "desc"):
        _, tools = page(client, "/dashboard/tools", range="all", sort=column, dir=direction)
        values = [stats[tool][column] for tool in rows_of(tools)]
        assert values == sorted(values, reverse=direction == "desc"), (column, direction)


def next_page(html: str) -> str | None:
    """The pager's link to the next page, if there is one."""
    found = re.search(r'rel="next" href="([^"]+)"', html)
    return html_text.unescape(found.group(1)) if found else None


def every_page(client: TestClient, url: str, **params: str) -> list[list[str]]:
    """The tools table's rows, page by page, following the pager's "next" links."""
    html, table = page(client, url, **params)
    shown = [list(rows_of(table))]
    while (link := next_page(html)) is not None:
        assert len(shown) < 20, "the pager never ends"
        response = client.get(link)  # as it is: params={} would drop its query
        assert response.status_code == 200, response.text
        html, table = response.text, Elements(response.text)
        shown.append(list(rows_of(table)))
    return shown


@pytest.mark.parametrize("namespace", ["", "team-b"])
def test_the_tools_table_comes_in_pages_that_keep_the_filters_and_the_sort(
    seeded: tuple[TestClient, Seeded], monkeypatch: pytest.MonkeyPatch, namespace: str
) -> None:
    client, _ = seeded
    asked = {"range": "all", "namespace": namespace, "sort": "name", "dir": "asc"}
    (whole,) = every_page(client, "/dashboard/tools", **asked)  # 50 a page: all on one
    assert len(whole) >= 3 and all(t.startswith(f"{namespace}/") for t in whole if namespace)
    monkeypatch.setattr(pages, "TOOLS_PAGE_SIZE", 2)
    paged = every_page(client, "/dashboard/tools", **asked)
    assert [row for rows in paged for row in rows] == whole  # same rows, same order, once
    assert len(paged) == -(-len(whole) // 2) and all(len(rows) <= 2 for rows in paged)
    html, _ = page(client, "/dashboard/tools", **asked, page="2")
    assert f"{len(whole)} tools with routing activity, 3–" in html
    _, past_the_end = page(client, "/dashboard/tools", **asked, page="999")
    assert list(rows_of(past_the_end)) == paged[-1]
    _, not_a_number = page(client, "/dashboard/tools", **asked, page="two")
    assert list(rows_of(not_a_number)) == paged[0]


def test_misroutes_show_query_candidates_and_links(seeded: tuple[TestClient, Seeded]) -> None:
    client, data = seeded
    html, misroutes = page(client, "/dashboard/misroutes", range="all")
    stats = v1_stats(client)
    assert [m["route_id"] for m in stats["misroutes"]] == [
        m["route_id"] for m in reversed(data.misroutes)
    ]
    for misroute in data.misroutes:
        assert f'data-route-id="{misroute["route_id"]}"' in html
        for name in [*misroute["candidates"], misroute["chosen"]]:
            link = f"/dashboard/registry/{misroute['namespace']}/{name}"
            assert link in misroutes.links
            assert client.get(link).status_code == 200
    assert "查询快递 SF1234567 到哪里了" in html


def test_a_query_with_a_script_tag_is_escaped(seeded: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded
    for url in ("/dashboard/misroutes", "/dashboard"):
        html, _ = page(client, url, range="all")
        assert "<script>alert" not in html
    html, _ = page(client, "/dashboard/misroutes", range="all")
    assert "&lt;script&gt;alert(&#39;xss&#39;)&lt;/script&gt; price of AAPL" in html
    assert XSS_QUERY not in html


def test_a_card_description_with_markup_is_escaped(seeded: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded
    for url in ("/dashboard/registry/default/get_stock_price", "/dashboard/registry"):
        html, _ = page(client, url)
        assert "<img" not in html
        assert XSS_DESCRIPTION not in html
    html, _ = page(client, "/dashboard/registry/default/get_stock_price")
    assert "&lt;img src=x onerror=" in html


def test_card_page_shows_schema_errors_versions(seeded: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded
    html, card = page(client, "/dashboard/registry/default/get_current_weather")
    assert card.by_id["card-name"]["data-name"] == "get_current_weather"
    assert "城市名 or city name" in html and "CITY_NOT_FOUND" in html and "one of" in html
    changed = {"description": "Current weather for a city, now with air quality."}
    assert client.put("/v1/tools/get_current_weather", json=changed, headers=ADMIN).is_success
    html, _ = page(client, "/dashboard/registry/default/get_current_weather")
    assert "v2" in html and "version=1" in html
    html, _ = page(client, "/dashboard/registry/default/get_current_weather", version="1")
    assert "older version" in html and "humidity" in html


def test_registry_lists_namespaces_and_searches(seeded: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded
    html, _ = page(client, "/dashboard/registry")
    assert "team-b" in html and "10 tools" in html
    html, listing = page(client, "/dashboard/registry", q="weather")
    cards = {link for link in listing.links if link.startswith("/dashboard/registry/")}
    assert cards == {
        "/dashboard/registry/default/get_current_weather",
        "/dashboard/registry/default/get_weather_forecast",
    }
    html, _ = page(client, "/dashboard/registry", namespace="team-b")
    assert "3 tools" in html and "get_stock_price" not in html


def test_the_registry_pager_keeps_the_namespace_and_the_search(
    seeded: tuple[TestClient, Seeded], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = seeded
    monkeypatch.setattr(registry_pages, "PAGE_SIZE", 2)
    html, _ = page(client, "/dashboard/registry", namespace="default", q="get")
    assert "page 1 of 2" in html  # get_current_weather, get_stock_history, get_stock_price, ...
    assert next_page(html) == "/dashboard/registry?namespace=default&q=get&page=2"


def test_lookalikes_page_lists_pairs_and_confusions(seeded: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded
    client.app.state.services.lookalikes.refresh()  # type: ignore[attr-defined]
    answer = client.get("/v1/lookalikes", params={"threshold": "0.5"}, headers=ADMIN).json()
    expected = answer["pairs"]
    assert answer["complete"]
    confused: dict[str, int] = {}
    for c in v1_stats(client)["confusions"]:
        a, b = sorted((c["offered_first"], c["chosen"]))
        key = f"{c['namespace']}/{a}/{b}"
        confused[key] = confused.get(key, 0) + c["count"]
    html, lookalikes = page(client, "/dashboard/lookalikes", threshold="0.5", range="all")
    assert f"{len(expected)} pairs" in html
    shown = {}
    for element in lookalikes.rows:
        if element["tag"] == "tr" and "data-pair" in element:
            pair = element["data-pair"]
        elif element.get("data-col") == "confused":
            shown[pair] = int(element["data-value"])
    assert set(shown) == {f"{p['namespace']}/{p['a']}/{p['b']}" for p in expected}
    for pair, count in shown.items():
        assert count == confused.get(pair, 0), pair
    assert any(shown.values())  # the seed makes look-alikes that were confused
    html, _ = page(client, "/dashboard/lookalikes", threshold="nan")
    assert "similarity ≥ 0.7" in html


def test_mangled_query_strings_still_render(seeded: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded
    for url, params in [
        ("/dashboard", {"range": "forever", "bucket": "minute", "since": "yesterday"}),
        ("/dashboard/tools", {"sort": "nope", "dir": "sideways", "namespace": "<x>"}),
        ("/dashboard/misroutes", {"limit": "-1"}),
        ("/dashboard/registry", {"page": "abc", "q": "x" * 500}),
        ("/dashboard/registry/default/get_stock_price", {"version": "abc"}),
    ]:
        response = client.get(url, params=params)
        assert response.status_code == 200, (url, response.text)
        assert "<x>" not in response.text


def routed_and_reported(client: TestClient, query: str, tag: str, chosen: str) -> None:
    """A route offering only the tools tagged ``tag`` (k=1), reported as ``chosen``."""
    from tests.conftest import AGENT

    body = {"query": query, "k": 1, "tags": [tag]}
    route = client.post("/v1/route", json=body, headers=AGENT).json()
    report = {"route_id": route["route_id"], "chosen": chosen, "outcome": "success"}
    assert client.post("/v1/feedback", json=report, headers=AGENT).status_code == 200


def test_a_card_lists_the_misroutes_it_was_chosen_in_however_many_it_was_offered_in(
    viewer: TestClient,
) -> None:
    """The card took the tool's 20 newest misroutes and kept those it was chosen in: 22
    newer ones where it was merely offered left its "chosen, not offered" list empty."""
    for name, tag in (("track_shipment", "ship"), ("get_order_details", "order")):
        card = {"name": name, "description": f"{name} does its job.", "tags": [tag]}
        assert viewer.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
    for i in range(3):
        routed_and_reported(viewer, f"order question {i}", "order", "track_shipment")
    for i in range(22):
        routed_and_reported(viewer, f"parcel question {i}", "ship", "get_order_details")
    viewer.app.state.services.events.flush()  # type: ignore[attr-defined]
    html, _ = page(viewer, "/dashboard/registry/default/track_shipment")
    for i in range(3):
        assert f"order question {i}" in html
    assert "parcel question" not in html


def test_look_alike_counts_see_every_confused_pair(viewer: TestClient) -> None:
    """A stats report lists the 50 most frequent confusions; the counts the look-alikes page
    shows come from all of them."""
    from app.dashboard.data import all_confusions, load_stats
    from app.dashboard.filters import parse_filters

    for i in range(8):
        card = {"name": f"tool_{i}", "description": f"Tool {i}.", "tags": [f"t{i}"]}
        assert viewer.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
    pairs = [(i, j) for i in range(8) for j in range(8) if i != j][:52]  # 52 distinct pairs
    for n, (i, j) in enumerate(pairs):
        routed_and_reported(viewer, f"step {n}", f"t{i}", f"tool_{j}")
    services = viewer.app.state.services  # type: ignore[attr-defined]
    services.events.flush()
    filters = parse_filters({"range": "all"})
    report = load_stats(services.session_factory, services.events, filters, None)
    assert len(report.confusions) == 50
    assert len(all_confusions(services.session_factory, None, filters)) == 52


def test_a_namespace_without_tools_shows_as_the_one_selected(viewer: TestClient) -> None:
    """The numbers are for the namespace asked for; the filter bar said 'all namespaces'."""
    html, _ = page(viewer, "/dashboard", namespace="ghost")
    assert '<option value="ghost" selected>ghost (no tools now)</option>' in html
    assert '<option value="" selected>' not in html


def test_card_page_lists_the_steps_query_memory_remembers(
    seeded: tuple[TestClient, Seeded],
) -> None:
    client, _ = seeded
    step = "how warm is it in Lisbon right now"
    answer = client.post("/v1/route", json={"query": step}, headers=ADMIN).json()
    body = {"route_id": answer["route_id"], "chosen": "get_current_weather", "outcome": "success"}
    assert client.post("/v1/feedback", json=body, headers=ADMIN).status_code == 200
    services = client.app.state.services  # type: ignore[attr-defined]
    services.events.flush()
    services.memory.refresh()
    html, card = page(client, "/dashboard/registry/default/get_current_weather")
    assert "tool-memory" in card.by_id
    assert step in html and answer["route_id"] in html
    html, _ = page(client, "/dashboard/registry/default/get_stock_price")
    assert step not in html and "Remembers no step yet" in html
