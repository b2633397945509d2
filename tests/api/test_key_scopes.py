"""Keys limited to namespaces, on every surface: who gets what (one table), the 404 that
cannot tell another namespace's thing from one that does not exist, and the filtering done
before anything is ranked."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.loop_support import services_of
from tests.api.test_tools import weather_card
from tests.conftest import ADMIN, ADMIN_KEY, AGENT_KEY, empty_database, make_settings
from tests.dashboard.conftest import sign_in
from tests.dashboard.test_dashboard_access import api_routes

SCOPED_ADMIN = "scoped-admin-key-0123456789"
SCOPED_AGENT = "scoped-agent-key-0123456789"
PAIR_AGENT = "pair-agent-key-0123456789"  # limited to two namespaces: no default one
SCOPED_VIEWER = "scoped-viewer-key-0123456789"
OWN, OTHER, NOWHERE = "team-a", "team-b", "team-z"  # NOWHERE: a namespace nobody has


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def scoped_settings(url: str, **overrides: object) -> Any:
    return make_settings(
        url,
        admin_keys=(ADMIN_KEY, f"{SCOPED_ADMIN}@{OWN}"),
        agent_keys=(AGENT_KEY, f"{SCOPED_AGENT}@{OWN}", f"{PAIR_AGENT}@{OWN}|team-c"),
        dashboard_keys=(f"{SCOPED_VIEWER}@{OWN}",),
        metrics_public=False,
        **overrides,
    )


# Each caller of the table: a key, and the namespace its requests name.
CALLERS: dict[str, tuple[str, str]] = {
    "admin": (ADMIN_KEY, OTHER),
    "scoped admin, own": (SCOPED_ADMIN, OWN),
    "scoped admin, other": (SCOPED_ADMIN, OTHER),
    "scoped agent, own": (SCOPED_AGENT, OWN),
    "scoped agent, other": (SCOPED_AGENT, OTHER),
    "scoped dashboard key, own": (SCOPED_VIEWER, OWN),
}


def slug(caller: str) -> str:
    return re.sub(r"[^a-z]+", "_", caller).strip("_")


def tools_of(namespace: str) -> list[dict[str, Any]]:
    """The same two names in every namespace (look-alikes of each other), and one tool per
    caller for DELETE to take away."""
    order = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    return [
        weather_card(
            name="lookup_order", description="Look up an order by its id.", parameters=order
        ),
        weather_card(name="find_order", description="Find an order by its id.", parameters=order),
        *(weather_card(name=f"doomed_{slug(c)}", description="A tool to delete.") for c in CALLERS),
    ]


@dataclass
class World:
    client: TestClient
    routes: dict[str, str]  # a route id per namespace
    table_keys: dict[str, str]  # a key id of the table per caller, for DELETE /v1/keys


@pytest.fixture(scope="module", params=["postgres", "sqlite"])
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    """One app for the whole table: every write of a case names its own tool or key."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    empty_database(url)
    app = create_app(scoped_settings(url), encoder=make_encoder("fake"))
    with TestClient(app, raise_server_exceptions=False) as client:
        for namespace in (OWN, OTHER):
            body = {"tools": tools_of(namespace), "namespace": namespace}
            assert client.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        routes = {
            ns: client.post(
                "/v1/route", json={"query": "look up order 42", "namespace": ns}, headers=ADMIN
            ).json()["route_id"]
            for ns in (OWN, OTHER)
        }
        services_of(client).events.flush()
        services_of(client).lookalikes.refresh()  # (the background waits for writes to settle)
        table_keys = {
            caller: client.post("/v1/keys", json={"role": "agent"}, headers=ADMIN).json()["id"]
            for caller in CALLERS
        }
        yield World(client, routes, table_keys)


Call = tuple[str, str, dict[str, Any]]  # method, path, keyword arguments of the request


def card(name: str) -> dict[str, Any]:
    return weather_card(name=name)


# Each endpoint: the request a caller makes, naming the namespace `ns`.
ENDPOINTS: dict[str, Callable[[World, str, str], Call]] = {
    "POST /v1/route": lambda w, c, ns: (
        "post",
        "/v1/route",
        {"json": {"query": "look up order 42", "namespace": ns}},
    ),
    "POST /v1/route/batch": lambda w, c, ns: (
        "post",
        "/v1/route/batch",
        {"json": {"steps": [{"query": "look up order 42", "namespace": ns}]}},
    ),
    "POST /v1/validate": lambda w, c, ns: (
        "post",
        "/v1/validate",
        {"json": {"name": "lookup_order", "namespace": ns, "arguments": {"order_id": "42"}}},
    ),
    "POST /v1/feedback": lambda w, c, ns: (
        "post",
        "/v1/feedback",
        {"json": {"route_id": w.routes[ns], "chosen": "lookup_order"}},
    ),
    "GET /v1/tools": lambda w, c, ns: ("get", "/v1/tools", {"params": {"namespace": ns}}),
    "GET /v1/tools/{name}": lambda w, c, ns: (
        "get",
        "/v1/tools/lookup_order",
        {"params": {"namespace": ns}},
    ),
    "POST /v1/tools": lambda w, c, ns: (
        "post",
        "/v1/tools",
        {"json": card(f"new_{slug(c)}"), "params": {"namespace": ns}},
    ),
    "PUT /v1/tools/{name}": lambda w, c, ns: (
        "put",
        f"/v1/tools/put_{slug(c)}",
        {"json": card(f"put_{slug(c)}"), "params": {"namespace": ns}},
    ),
    "POST /v1/tools/bulk": lambda w, c, ns: (
        "post",
        "/v1/tools/bulk",
        {"json": {"tools": [card(f"bulk_{slug(c)}")], "namespace": ns}},
    ),
    "DELETE /v1/tools/{name}": lambda w, c, ns: (
        "delete",
        f"/v1/tools/doomed_{slug(c)}",
        {"params": {"namespace": ns}},
    ),
    "GET /v1/stats": lambda w, c, ns: ("get", "/v1/stats", {"params": {"namespace": ns}}),
    "GET /v1/lookalikes": lambda w, c, ns: (
        "get",
        "/v1/lookalikes",
        {"params": {"namespace": ns, "threshold": 0}},
    ),
    "GET /v1/keys": lambda w, c, ns: ("get", "/v1/keys", {}),
    "POST /v1/keys": lambda w, c, ns: (
        "post",
        "/v1/keys",
        {"json": {"role": "agent", "namespaces": [ns]}},
    ),
    "DELETE /v1/keys/{id}": lambda w, c, ns: ("delete", f"/v1/keys/{w.table_keys[c]}", {}),
    "GET /metrics": lambda w, c, ns: ("get", "/metrics", {}),
    # The gateway: a tool with no source is a structured error (200, ok false) in scope.
    "POST /v1/call": lambda w, c, ns: (
        "post",
        "/v1/call",
        {"json": {"name": "lookup_order", "arguments": {}, "namespace": ns}},
    ),
    "POST /v1/call/batch": lambda w, c, ns: (
        "post",
        "/v1/call/batch",
        {"json": {"calls": [{"name": "lookup_order", "arguments": {}, "namespace": ns}]}},
    ),
    # Sources write into the namespaces they name: an admin key limited to none only.
    "GET /v1/sources": lambda w, c, ns: ("get", "/v1/sources", {}),
    "POST /v1/sources": lambda w, c, ns: ("post", "/v1/sources", {"json": {}}),
    "GET /v1/sources/{name}": lambda w, c, ns: ("get", "/v1/sources/nope", {}),
    "DELETE /v1/sources/{name}": lambda w, c, ns: ("delete", "/v1/sources/nope", {}),
    "POST /v1/sources/{name}/sync": lambda w, c, ns: ("post", "/v1/sources/nope/sync", {}),
    # Forgetting query memory writes in the namespace: admin keys within their scope.
    "DELETE /v1/memory/{name}": lambda w, c, ns: (
        "delete",
        "/v1/memory/lookup_order",
        {"params": {"namespace": ns}},
    ),
    # The card doctor: advice is read like stats; applying it writes cards (admin).
    "GET /v1/advice": lambda w, c, ns: ("get", "/v1/advice", {"params": {"namespace": ns}}),
    "POST /v1/advice/{advice_id}/apply": lambda w, c, ns: (
        "post",
        "/v1/advice/nope/apply",
        {"params": {"namespace": ns}},
    ),
    # Learning: its state is read like stats; training, the switch and rollback write (admin).
    "GET /v1/learning": lambda w, c, ns: ("get", "/v1/learning", {"params": {"namespace": ns}}),
    "POST /v1/learning/{namespace}/train": lambda w, c, ns: (
        "post",
        f"/v1/learning/{ns}/train",
        {},
    ),
    "POST /v1/learning/{namespace}/rollback": lambda w, c, ns: (
        "post",
        f"/v1/learning/{ns}/rollback",
        {},
    ),
    "POST /v1/learning/{namespace}/off": lambda w, c, ns: ("post", f"/v1/learning/{ns}/off", {}),
    "POST /v1/learning/{namespace}/on": lambda w, c, ns: ("post", f"/v1/learning/{ns}/on", {}),
}

EMPTY = "200, empty"  # 200, and nothing of the namespace named
# Who gets what: one column per caller, in the order of CALLERS.
# admin · scoped admin own · scoped admin other · agent own · agent other · dashboard own
EXPECTED: dict[str, tuple[int | str, ...]] = {
    "POST /v1/route": (200, 200, 404, 200, 404, 403),
    "POST /v1/route/batch": (200, 200, 404, 200, 404, 403),
    "POST /v1/validate": (200, 200, 404, 200, 404, 403),
    "POST /v1/feedback": (200, 200, 404, 200, 404, 403),
    "GET /v1/tools": (200, 200, 404, 200, 404, 403),
    "GET /v1/tools/{name}": (200, 200, 404, 200, 404, 403),
    "POST /v1/tools": (201, 201, 403, 403, 403, 403),
    "PUT /v1/tools/{name}": (201, 201, 403, 403, 403, 403),
    "POST /v1/tools/bulk": (200, 200, 403, 403, 403, 403),
    "DELETE /v1/tools/{name}": (204, 204, 403, 403, 403, 403),
    "GET /v1/stats": (200, 200, 404, 403, 403, 200),
    "GET /v1/lookalikes": (200, 200, 404, 403, 403, 200),
    "GET /v1/keys": (200, 403, 403, 403, 403, 403),
    "POST /v1/keys": (201, 403, 403, 403, 403, 403),
    "DELETE /v1/keys/{id}": (204, 403, 403, 403, 403, 403),
    "GET /metrics": (200, 403, 403, 403, 403, 403),
    "POST /v1/call": (200, 200, 404, 200, 404, 403),
    "POST /v1/call/batch": (200, 200, 404, 200, 404, 403),
    "GET /v1/sources": (200, 403, 403, 403, 403, 403),
    "POST /v1/sources": (422, 403, 403, 403, 403, 403),
    "GET /v1/sources/{name}": (404, 403, 403, 403, 403, 403),
    "DELETE /v1/sources/{name}": (404, 403, 403, 403, 403, 403),
    "POST /v1/sources/{name}/sync": (404, 403, 403, 403, 403, 403),
    "DELETE /v1/memory/{name}": (204, 204, 403, 403, 403, 403),
    "GET /v1/advice": (200, 200, 404, 403, 403, 200),
    "POST /v1/advice/{advice_id}/apply": (409, 409, 403, 403, 403, 403),
    "GET /v1/learning": (200, 200, 404, 403, 403, 200),
    "POST /v1/learning/{namespace}/train": (200, 200, 403, 403, 403, 403),
    "POST /v1/learning/{namespace}/rollback": (409, 409, 403, 403, 403, 403),
    "POST /v1/learning/{namespace}/off": (200, 200, 403, 403, 403, 403),
    "POST /v1/learning/{namespace}/on": (200, 200, 403, 403, 403, 403),
}
CASES = [
    (endpoint, caller, expected)
    for endpoint, row in EXPECTED.items()
    for caller, expected in zip(CALLERS, row, strict=True)
]


def holds_something(endpoint: str, body: dict[str, Any]) -> bool | None:
    """Whether a list-like answer holds anything (None: not a list-like endpoint)."""
    if endpoint == "GET /v1/tools":
        return bool(body["items"]) or body["total"] > 0
    if endpoint == "GET /v1/stats":
        return body["routes"] > 0 or bool(body["tools"])
    if endpoint == "GET /v1/lookalikes":
        return bool(body["pairs"])
    return None


def test_every_endpoint_is_in_the_table(world: World) -> None:
    """A new endpoint must join the table: every /v1 route and /metrics is one of its rows."""
    paths = {
        f"{method} {route.path}".replace("{key_id}", "{id}")
        for route in api_routes(world.client.app.routes)  # type: ignore[attr-defined]
        if route.path.startswith(("/v1", "/metrics"))
        for method in route.methods
        if method != "HEAD"
    }
    assert paths == set(EXPECTED)


@pytest.mark.parametrize(("endpoint", "caller", "expected"), CASES)
def test_who_gets_what(world: World, endpoint: str, caller: str, expected: int | str) -> None:
    key, namespace = CALLERS[caller]
    method, path, kwargs = ENDPOINTS[endpoint](world, caller, namespace)
    response = world.client.request(method, path, headers=bearer(key), **kwargs)
    status = 200 if expected == EMPTY else expected
    assert response.status_code == status, f"{endpoint} as {caller}: {response.text}"
    if status == 200 and endpoint != "GET /metrics":
        holds = holds_something(endpoint, response.json())
        assert holds is None or holds == (expected != EMPTY), response.text
    if status in (401, 403, 404):
        assert set(response.json()["error"]) == {"code", "message", "details"}


def same_shape(a: Any, b: Any, *swaps: tuple[str, str]) -> None:
    """Two error answers are the same but for the names in ``swaps`` (``b``'s → ``a``'s)."""
    assert (a.status_code, a.headers.get("www-authenticate")) == (
        b.status_code,
        b.headers.get("www-authenticate"),
    )
    text = b.text
    for theirs, ours in swaps:
        text = text.replace(theirs, ours)
    assert a.text == text
    assert a.json()["error"]["code"] == "not_found"


def test_another_namespaces_tool_is_the_404_of_a_missing_one(world: World) -> None:
    agent = bearer(SCOPED_AGENT)
    hidden = world.client.get("/v1/tools/lookup_order", params={"namespace": OTHER}, headers=agent)
    missing = world.client.get("/v1/tools/ghost", params={"namespace": OWN}, headers=agent)
    same_shape(hidden, missing, ("ghost", "lookup_order"), (OWN, OTHER))
    # ... and, to the unscoped admin, the same as a tool that truly is nowhere.
    nowhere = world.client.get(
        "/v1/tools/lookup_order", params={"namespace": NOWHERE}, headers=ADMIN
    )
    same_shape(hidden, nowhere, (NOWHERE, OTHER))
    versioned = world.client.get(
        "/v1/tools/lookup_order", params={"namespace": OTHER, "version": 1}, headers=agent
    )
    same_shape(versioned, hidden)


def test_another_namespace_is_answered_as_one_that_does_not_exist(world: World) -> None:
    """Word for word, did-you-mean included: it offers the key's own namespace only."""
    agent, viewer = bearer(SCOPED_AGENT), bearer(SCOPED_VIEWER)
    for path, body in (
        ("/v1/route", {"query": "look up order 42"}),
        ("/v1/route", {"query": "look up order", "format": "openai_tool_search", "call_id": "c1"}),
        ("/v1/validate", {"name": "lookup_order"}),
        ("/v1/call", {"name": "lookup_order"}),
    ):
        hidden = world.client.post(path, json={**body, "namespace": OTHER}, headers=agent)
        nowhere = world.client.post(path, json={**body, "namespace": NOWHERE}, headers=agent)
        same_shape(hidden, nowhere, (NOWHERE, OTHER))
        assert hidden.json()["error"]["details"] == {"namespace": OTHER, "did_you_mean": [OWN]}
    for path, key in (("/v1/tools", agent), ("/v1/stats", viewer), ("/v1/lookalikes", viewer)):
        hidden = world.client.get(path, params={"namespace": OTHER}, headers=key)
        nowhere = world.client.get(path, params={"namespace": NOWHERE}, headers=key)
        same_shape(hidden, nowhere, (NOWHERE, OTHER))


@pytest.mark.parametrize("path", ["/v1/learning", "/v1/advice"])
def test_another_namespaces_learning_is_the_404_of_a_missing_one(world: World, path: str) -> None:
    """A read, so not the 403 of a write (issue 38 item 9): word for word a namespace that
    never held a tool, for the scoped dashboard key and the scoped admin alike; the learned
    model and the card doctor's advice alike."""
    for key in (SCOPED_VIEWER, SCOPED_ADMIN):
        params = {"namespace": OTHER}
        hidden = world.client.get(path, params=params, headers=bearer(key))
        nowhere = world.client.get(path, params={"namespace": NOWHERE}, headers=bearer(key))
        same_shape(hidden, nowhere, (NOWHERE, OTHER))
        assert hidden.json()["error"]["details"] == {"namespace": OTHER, "did_you_mean": [OWN]}


def test_another_namespaces_route_is_an_unknown_route(world: World) -> None:
    agent = bearer(SCOPED_AGENT)
    made_up = "f" * 32
    hidden = world.client.post(
        "/v1/feedback", json={"route_id": world.routes[OTHER], "chosen": None}, headers=agent
    )
    unknown = world.client.post(
        "/v1/feedback", json={"route_id": made_up, "chosen": None}, headers=agent
    )
    same_shape(hidden, unknown, (made_up, world.routes[OTHER]))
    # /v1/validate with another namespace's route id answers, and records nothing there
    fresh = world.client.post(
        "/v1/route", json={"query": "find order 7", "namespace": OTHER}, headers=ADMIN
    ).json()["route_id"]
    checked = world.client.post(
        "/v1/validate",
        json={"name": "lookup_order", "namespace": OWN, "route_id": fresh},
        headers=agent,
    )
    assert checked.status_code == 200 and checked.json()["valid"] is True
    # had it recorded lookup_order as the route's choice, another tool would be a 409
    other_tool = {"route_id": fresh, "chosen": "find_order"}
    reported = world.client.post("/v1/feedback", json=other_tool, headers=ADMIN)
    assert reported.status_code == 200 and reported.json()["from_validate"] is False


def test_a_stats_filter_out_of_scope_counts_as_an_unknown_namespace(world: World) -> None:
    viewer = bearer(SCOPED_VIEWER)
    hidden = world.client.get("/v1/stats", params={"namespace": OTHER}, headers=viewer)
    nowhere = world.client.get("/v1/stats", params={"namespace": NOWHERE}, headers=viewer)
    same_shape(hidden, nowhere, (NOWHERE, OTHER))
    everything = world.client.get("/v1/stats", headers=viewer).json()
    assert {t["namespace"] for t in everything["tools"]} == {OWN}
    world.client.app.state.services.lookalikes.refresh()  # type: ignore[attr-defined]
    pairs = world.client.get("/v1/lookalikes", params={"threshold": 0}, headers=viewer).json()
    assert pairs["complete"] and pairs["pairs"]
    assert {p["namespace"] for p in pairs["pairs"]} == {OWN}


def test_a_list_shows_only_the_keys_namespaces(world: World) -> None:
    for key in (SCOPED_AGENT, SCOPED_ADMIN):
        listed = world.client.get("/v1/tools", params={"limit": 500}, headers=bearer(key)).json()
        assert listed["total"] > 0 and {t["namespace"] for t in listed["items"]} == {OWN}
        exported = world.client.get(
            "/v1/tools", params={"format": "openai", "namespace": OTHER}, headers=bearer(key)
        )
        assert (
            exported.status_code == 404
            and OTHER not in exported.json()["error"]["details"]["did_you_mean"]
        )


def test_a_key_of_one_namespace_works_there_by_default(world: World) -> None:
    agent = bearer(SCOPED_AGENT)
    routed = world.client.post("/v1/route", json={"query": "look up order 42"}, headers=agent)
    assert routed.status_code == 200 and routed.json()["namespace"] == OWN
    assert routed.json()["candidates"][0]["name"] in ("lookup_order", "find_order")
    valid = world.client.post(
        "/v1/validate", json={"name": "lookup_order", "arguments": {"order_id": "1"}}, headers=agent
    )
    assert valid.json()["valid"] is True
    tool = world.client.get("/v1/tools/lookup_order", headers=agent)
    assert tool.status_code == 200 and tool.json()["namespace"] == OWN
    admin = bearer(SCOPED_ADMIN)
    put = world.client.put("/v1/tools/defaulted", json=card("defaulted"), headers=admin)
    assert put.status_code == 201 and put.json()["namespace"] == OWN
    # a key of two namespaces has no default: "default" is not one of them
    pair = world.client.post("/v1/route", json={"query": "x"}, headers=bearer(PAIR_AGENT))
    assert pair.status_code == 404 and "'default'" in pair.json()["error"]["message"]


def test_a_scoped_admin_writes_nowhere_else(world: World) -> None:
    admin = bearer(SCOPED_ADMIN)
    named_elsewhere = world.client.post(
        "/v1/tools", json={**card("sneaky"), "namespace": OTHER}, headers=admin
    )
    assert named_elsewhere.status_code == 403
    mixed = {"tools": [card("fine"), {**card("sneaky"), "namespace": OTHER}]}
    assert world.client.post("/v1/tools/bulk", json=mixed, headers=admin).status_code == 403
    for ns in (OWN, OTHER):
        listed = world.client.get(
            "/v1/tools", params={"namespace": ns, "text": "sneaky"}, headers=ADMIN
        )
        assert listed.json()["total"] == 0
    assert (
        world.client.get("/v1/tools/fine", params={"namespace": OWN}, headers=ADMIN).status_code
        == 404
    )


def test_nothing_of_another_namespace_is_looked_at(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scope is applied before ranking: the index of another namespace is never read, and
    no route event is written for it."""
    services = services_of(world.client)
    read: list[str] = []
    for method in ("get", "card", "names"):
        original = getattr(services.index, method)

        def spy(namespace: str, *args: Any, _original: Any = original) -> Any:
            read.append(namespace)
            return _original(namespace, *args)

        monkeypatch.setattr(services.index, method, spy)
    services.events.flush()
    before = services.events.written
    agent = bearer(SCOPED_AGENT)
    for path, body in (
        ("/v1/route", {"query": "look up order 42", "namespace": OTHER}),
        ("/v1/validate", {"name": "lookup_order", "namespace": OTHER}),
        ("/v1/feedback", {"route_id": world.routes[OTHER], "chosen": "lookup_order"}),
    ):
        assert world.client.post(path, json=body, headers=agent).status_code == 404
    assert OTHER not in read
    services.events.flush()
    assert services.events.written == before
    # the control: the same spy does see a namespace the key may read
    world.client.post("/v1/route", json={"query": "look up order 42"}, headers=agent)
    assert OWN in read


def main_of(html: str) -> str:
    found = re.search(r"<main>(.*)</main>", html, re.S)
    assert found is not None
    return found.group(1)


def test_the_dashboard_of_a_scoped_key(world: World) -> None:
    client = TestClient(world.client.app, base_url="https://testserver")
    sign_in(client, SCOPED_VIEWER)
    hidden = client.get(f"/dashboard/registry/{OTHER}/lookup_order")
    missing = client.get(f"/dashboard/registry/{OWN}/ghost")
    assert hidden.status_code == missing.status_code == 404
    assert main_of(hidden.text) == main_of(missing.text).replace("ghost", "lookup_order").replace(
        OWN, OTHER
    )
    assert client.get(f"/dashboard/registry/{OWN}/lookup_order").status_code == 200
    for page in ("/dashboard", "/dashboard/tools", "/dashboard/registry", "/dashboard/lookalikes"):
        html = client.get(page, params={"range": "all", "threshold": "0"}).text
        assert OWN in html and OTHER not in html, page
    stats = client.get("/dashboard/stats.json", params={"range": "all"}).json()
    assert stats["routes"] > 0 and {t["namespace"] for t in stats["tools"]} == {OWN}
    elsewhere = client.get("/dashboard/stats.json", params={"range": "all", "namespace": OTHER})
    assert elsewhere.status_code == 404  # as the API answers a namespace the key cannot see
    admin = TestClient(world.client.app, base_url="https://testserver")
    sign_in(admin, SCOPED_ADMIN)
    assert admin.get(f"/dashboard/registry/{OTHER}/lookup_order").status_code == 404
    everyone = TestClient(world.client.app, base_url="https://testserver")
    sign_in(everyone, ADMIN_KEY)
    assert everyone.get(f"/dashboard/registry/{OTHER}/lookup_order").status_code == 200
    assert OTHER in everyone.get("/dashboard/registry").text
