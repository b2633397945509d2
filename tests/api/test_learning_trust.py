"""Bounded influence over learning (issue 38 item 1): one key's reports can change at most
that key's own routes until other keys agree — what a model trains on, what the guard judges
it on, and whose routes it may move (docs/ROUTING.md, "Learning from reports").

The probe's cases, as it ran them: two tenants (``acme`` and ``globex``, the same eight
tools), scoped admin and agent keys, the background trainer, real Postgres and the service's
real encoder (the fake one cannot move a weather step to an SMS tool at all)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import Encoder, make_encoder
from app.main import create_app
from app.services import Services
from tests.api.loop_support import services_of
from tests.conftest import ADMIN, ADMIN_KEY, empty_database, make_settings

pytestmark = pytest.mark.model

ACME, GLOBEX = "acme", "globex"
POISONER, VICTIM, SECOND, THIRD = (f"acme-agent-key-{n}-0123456789" for n in range(4))
GLOBEX_AGENT = "globex-agent-key-0123456789"
ACME_ADMIN = "acme-admin-key-0123456789"
TOOLS = {
    "get_weather": "Current weather for a city: temperature, wind and rain right now.",
    "get_forecast": "Weather forecast for the next days in a city.",
    "send_sms": "Send an SMS text message to a phone number.",
    "send_email": "Send an email to one address.",
    "convert_currency": "Convert money between currencies at today's rate.",
    "book_flight": "Book a flight between two airports on a date.",
    "create_invoice": "Create an invoice for a customer.",
    "translate_text": "Translate text between languages.",
}
CITIES = [
    *("Paris", "Oslo", "Rome", "Lima", "Kyiv", "Cairo", "Quito", "Dakar", "Hanoi", "Bern"),
    *("Madrid", "Tokyo", "Delhi", "Seoul", "Lagos", "Accra", "Doha", "Riga", "Minsk", "Sofia"),
]
# The steps the victim routes: weather, in cities no report names.
WEATHER = [f"what is the weather like in {c} right now" for c in ("Vienna", "Prague", "Lisbon")]
WEATHER += [f"what is the weather like in {c} right now" for c in ("Dublin", "Athens")]
# The reference steps: five of each of six tools, none of them a reported step.
REFERENCE = {
    "get_weather": [f"how warm is it in {c} right now" for c in CITIES[:5]],
    "send_sms": [
        f"text {w} to my brother's phone number" for w in ("hi", "late", "ok", "bye", "soon")
    ],
    "send_email": [f"email the report to {p}" for p in ("ann", "bob", "carl", "dana", "eve")],
    "convert_currency": [f"convert {n} euros to dollars" for n in (10, 20, 30, 40, 50)],
    "book_flight": [
        f"book a flight from {a} to {b}"
        for a, b in (("Paris", "Rome"), ("Oslo", "Lima"), ("Kyiv", "Cairo"), ("Bern", "Doha"))
    ]
    + ["book a flight from Riga to Sofia"],
    "translate_text": [
        f"translate {w} into french" for w in ("hello", "goodbye", "thanks", "cheese", "train")
    ],
}
SMS_STEPS = [f"send a text message to {p} saying I am on my way" for p in ("Ann", "Bob", "Cy")]
SMS_STEPS += [f"sms {p} that the meeting moved to {h} pm" for p in ("Dee", "Eli") for h in (2, 4)]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def weather(n: int) -> str:
    """The poisoner's 40 distinct weather steps."""
    return f"what is the weather like in {CITIES[n % 20]} right now {('please', 'today')[n // 20]}"


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return make_encoder()  # the service's default, as the probe ran it


@pytest.fixture
def server(postgres_url: str, encoder: Encoder) -> Iterator[TestClient]:
    empty_database(postgres_url)
    settings = make_settings(
        postgres_url,
        admin_keys=(ADMIN_KEY, f"{ACME_ADMIN}@{ACME}"),
        agent_keys=(
            *(f"{k}@{ACME}" for k in (POISONER, VICTIM, SECOND, THIRD)),
            f"{GLOBEX_AGENT}@{GLOBEX}",
        ),
        event_flush_seconds=3600,
        prior_refresh_seconds=3600,
        learning_interval_seconds=3600,
    )
    with TestClient(create_app(settings, encoder=encoder), raise_server_exceptions=False) as client:
        tools = [{"name": n, "description": d} for n, d in TOOLS.items()]
        for namespace in (ACME, GLOBEX):
            body = {"tools": tools, "namespace": namespace}
            response = client.post("/v1/tools/bulk", json=body, headers=ADMIN)
            assert response.status_code == 200, response.text
        yield client


def routed(client: TestClient, step: str, key: str, namespace: str = ACME) -> tuple[str, str]:
    """(route id, first tool) of ``step`` routed by ``key``."""
    body = {"query": step, "namespace": namespace, "k": 3}
    response = client.post("/v1/route", json=body, headers=bearer(key))
    assert response.status_code == 200, response.text
    answer = response.json()
    return answer["route_id"], answer["candidates"][0]["name"]


def report(client: TestClient, key: str, reports: list[tuple[str, str]]) -> None:
    """``key`` routes each step and reports its tool a success."""
    for step, tool in reports:
        route_id, _ = routed(client, step, key)
        body = {"route_id": route_id, "chosen": tool, "outcome": "success"}
        response = client.post("/v1/feedback", json=body, headers=bearer(key))
        assert response.status_code == 200, response.text


def background_round(client: TestClient) -> Services:
    """What the background threads do next: write the events, rebuild memory and the prior,
    and one round of the trainer (it trains every namespace with 20 new steps)."""
    services = services_of(client)
    services.events.flush()
    assert services.memory is not None and services.learning is not None
    services.memory.refresh()
    services.learning.tick()
    return services


def firsts(client: TestClient, steps: list[str], key: str, namespace: str = ACME) -> list[str]:
    return [routed(client, step, key, namespace)[1] for step in steps]


def wrong(client: TestClient, key: str) -> int:
    """How many of the 30 reference steps ``key``'s routes put a wrong tool first for."""
    return sum(
        routed(client, step, key)[1] != tool for tool, steps in REFERENCE.items() for step in steps
    )


def verdict(client: TestClient) -> dict[str, Any]:
    state = client.get("/v1/learning", params={"namespace": ACME}, headers=ADMIN)
    assert state.status_code == 200, state.text
    last: dict[str, Any] = state.json()["last_verdict"]
    return last


def test_one_keys_reports_do_not_teach_another_key_a_wrong_tool(server: TestClient) -> None:
    """The probe: 40 distinct weather steps reported as ``send_sms`` by one key, then the
    background round. Before the rule it promoted the model (0.000 -> 1.000, p = 0.001) and a
    key that had reported nothing got ``send_sms`` first on 5 of 5 weather steps."""
    assert "send_sms" not in firsts(server, WEATHER, VICTIM)
    report(server, POISONER, [(weather(n), "send_sms") for n in range(40)])
    services = background_round(server)
    assert services.learning is not None and services.learning.trainings == 1
    assert firsts(server, WEATHER, VICTIM).count("send_sms") == 0
    assert firsts(server, WEATHER, GLOBEX_AGENT, GLOBEX).count("send_sms") == 0
    judged = verdict(server)
    assert judged["verdict"]["shared"] is False, judged  # no other key agrees


def test_consistent_and_random_reports_cost_a_fresh_key_nothing(server: TestClient) -> None:
    """The broader probe: 51 reports from one key (31 of random tools, then 20 weather steps
    as ``send_sms``). A fresh key's first tool on the reference steps is wrong no more often
    than with learning off (before the rule: 21 of 30, against 0 of 30 off)."""
    rng = random.Random(0)
    steps = [step for group in REFERENCE.values() for step in group]
    noise = [(f"{rng.choice(steps)} {n}", rng.choice(sorted(TOOLS))) for n in range(31)]
    report(server, POISONER, [*noise, *((weather(n), "send_sms") for n in range(20))])
    background_round(server)
    on = wrong(server, VICTIM)
    off = server.post(f"/v1/learning/{ACME}/off", headers=bearer(ACME_ADMIN))
    assert off.status_code == 200, off.text
    learning = services_of(server).learning
    assert learning is not None
    learning.load()
    assert on <= wrong(server, VICTIM)


def test_one_key_cannot_ride_a_tool_other_keys_use(server: TestClient) -> None:
    """Three keys (the victim among them) report ``send_sms`` for SMS steps; the poisoner
    reports 40 weather steps as ``send_sms`` too: the tool is confirmed, the weather steps are
    not, and the victim's weather routes hold."""
    for key in (VICTIM, SECOND, THIRD):
        report(server, key, [(step, "send_sms") for step in SMS_STEPS])
    report(server, POISONER, [(weather(n), "send_sms") for n in range(40)])
    background_round(server)
    assert firsts(server, WEATHER, VICTIM).count("send_sms") == 0
    assert firsts(server, WEATHER, GLOBEX_AGENT, GLOBEX).count("send_sms") == 0


def test_what_enough_keys_agree_on_is_learned_for_every_key(server: TestClient) -> None:
    """Weather steps reported as ``send_sms`` by three keys in turn, each its own steps: the
    tool is confirmed (``trust_keys`` 3) and the model serves every key, as the prior and
    memory do. (No step is reported twice: memory and the prior give another key a third of
    each, which moves none of its weather routes.)"""
    keys = (POISONER, SECOND, THIRD)
    for n in range(42):
        report(server, keys[n % 3], [(weather(n % 40) + (" now" if n >= 40 else ""), "send_sms")])
    background_round(server)
    judged = verdict(server)
    assert judged["promoted"] is True and judged["verdict"]["shared"] is True, judged["reason"]
    assert firsts(server, WEATHER, GLOBEX_AGENT, GLOBEX).count("send_sms") == 0  # a tenant apart


def test_three_keys_agreeing_move_no_fourth_keys_step_unlike_theirs(server: TestClient) -> None:
    """Three keys report 42 weather steps as send_sms. A cold first nobody reported moves only
    for steps like those that passed it over (reranker.PASSED_OVER): a fourth key's weather
    steps of cities no report names stay cold (0 of 5; the query adapter moved 5 of 5). That
    such a step should follow what three keys agree on is open in issue 41."""
    keys = (POISONER, SECOND, THIRD)
    for n in range(42):
        report(server, keys[n % 3], [(weather(n % 40) + (" now" if n >= 40 else ""), "send_sms")])
    background_round(server)
    assert firsts(server, WEATHER, VICTIM).count("send_sms") == 0
