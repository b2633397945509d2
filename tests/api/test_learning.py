"""Learning from reports, served (app/learning/service.py): the guard's verdict decides what
serves, every replica and every restart routes with the stored model, an admin can switch
it off and roll it back, and a forgotten tool is trained without.

Each step of a namespace's five tools is a phrase of its own words (none on any card) and
two varying words: with the fake encoder the cold router cannot tell them apart, and an
reranker trained on right reports can. Real Postgres and SQLite, the HTTP surface."""

from __future__ import annotations

import html
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, func, select, update

from app.cli.main import main
from app.db import unit_of_work
from app.embedding.encoders import make_encoder
from app.learning import repository
from app.learning.models import LearnedModel
from app.learning.service import LearningCache
from app.main import create_app
from app.services import Services
from tests.api.loop_support import services_of
from tests.conftest import ADMIN, empty_database, make_settings
from tests.dashboard.conftest import sign_in
from tests.waiting import until

NS = "learn"
KEYS = [f"test-agent-key-{n}-0123456789" for n in range(3)]
AGENTS = [{"Authorization": f"Bearer {k}"} for k in KEYS]
PHRASES = {
    "create_invoice": ("Create an invoice for a customer.", "bill the client retainer"),
    "refund_payment": ("Refund a card payment.", "reverse that charge back"),
    "book_meeting": ("Book a meeting room in the office.", "reserve space huddle"),
    "translate_text": ("Translate text between languages.", "render phrase french"),
    "resize_image": ("Resize an image to a new width.", "shrink picture pixels"),
}
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
]
PROBES = [f"{phrase} {WORDS[n]} {WORDS[n - 9]}" for _, phrase in PHRASES.values() for n in (10, 11)]


def settings(url: str, **overrides: object) -> Any:
    return make_settings(
        url,
        agent_keys=tuple(KEYS),
        event_flush_seconds=3600,
        prior_refresh_seconds=3600,
        learning_interval_seconds=3600,
        **overrides,
    )


def started(url: str, **overrides: object) -> TestClient:
    return TestClient(
        create_app(settings(url, **overrides), encoder=make_encoder("fake")),
        base_url="https://testserver",  # the dashboard's cookie is Secure
        raise_server_exceptions=False,
    )


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    with started(database_url) as client:
        tools = [{"name": n, "description": d} for n, (d, _) in PHRASES.items()]
        body = {"tools": tools, "namespace": NS}
        assert client.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        yield client


def report(client: TestClient, wrong: bool = False, seed: int = 0, rounds: int = 16) -> None:
    """Route 5 steps a round (80 by default), from three keys, and report each a success: of
    its own tool, or of a random other one (``wrong``); then rebuild the memory and the prior."""
    rng = random.Random(seed)
    for i in range(rounds):
        for n, (name, (_, phrase)) in enumerate(PHRASES.items()):
            key = AGENTS[(i * len(PHRASES) + n) % len(AGENTS)]
            step = f"{phrase} {WORDS[i]} {WORDS[(i * 7 + 3) % len(WORDS)]}"
            routed = client.post("/v1/route", json={"query": step, "namespace": NS}, headers=key)
            assert routed.status_code == 200, routed.text
            chosen = rng.choice([t for t in PHRASES if t != name]) if wrong else name
            body = {"route_id": routed.json()["route_id"], "chosen": chosen, "outcome": "success"}
            assert client.post("/v1/feedback", json=body, headers=key).status_code == 200
    refresh(services_of(client))


def refresh(services: Services) -> None:
    services.events.flush()
    assert services.memory is not None
    services.memory.refresh()


def answers(client: TestClient) -> list[list[tuple[str, float, dict[str, float]]]]:
    """Every probe's candidates: name, score, stages."""
    found = []
    for step in PROBES:
        body = {"query": step, "namespace": NS, "k": 5}
        routed = client.post("/v1/route", json=body, headers=AGENTS[0])
        assert routed.status_code == 200, routed.text
        found.append([(c["name"], c["score"], c["stages"]) for c in routed.json()["candidates"]])
    return found


def learned_parts(
    found: list[list[tuple[str, float, dict[str, float]]]],
) -> list[list[tuple[str, float | None]]]:
    """Each probe's candidates by name and learned part (the prior decays by the second)."""
    return [[(name, stages.get("learned")) for name, _, stages in answer] for answer in found]


def learned_stages(found: list[list[tuple[str, float, dict[str, float]]]]) -> int:
    return sum("learned" in stages for answer in found for _, _, stages in answer)


def train(client: TestClient) -> dict[str, Any]:
    response = client.post(f"/v1/learning/{NS}/train", headers=ADMIN)
    assert response.status_code == 200, response.text
    model: dict[str, Any] = response.json()["model"]
    return model


def models(services: Services) -> list[LearnedModel]:
    with unit_of_work(services.session_factory) as session:
        rows = repository.history(session, NS, 100)
        session.expunge_all()
        return rows


def test_a_model_trained_on_wrong_reports_is_refused_and_never_serves(client: TestClient) -> None:
    """Each step reported as a random other tool, by three keys: the challenger wins nothing
    on the newest reports, so it is stored refused, and no route reads it."""
    report(client, wrong=True)
    model = train(client)
    assert model["promoted"] is False and model["state"] == "refused"
    assert "may be a loss" in model["reason"]
    services = services_of(client)
    assert services.learning is not None and services.learning.get(NS) is None
    assert learned_stages(answers(client)) == 0
    state = client.get("/v1/learning", params={"namespace": NS}, headers=ADMIN).json()
    assert state["serving"] is None and state["last_verdict"]["state"] == "refused"


def test_right_reports_serve_a_model_and_learning_off_routes_as_without(
    client: TestClient,
) -> None:
    report(client)
    without = answers(client)  # the reports' prior and memory, no model yet
    assert learned_stages(without) == 0
    model = train(client)
    assert model["promoted"] is True and model["state"] == "serving"
    assert model["hit@1"]["with"] > model["hit@1"]["without"]
    with_model = answers(client)
    assert learned_stages(with_model) > 0
    assert client.post(f"/v1/learning/{NS}/off", headers=ADMIN).status_code == 200
    learning = services_of(client).learning
    assert learning is not None
    learning.load()
    assert learning.get(NS) is None and learning.held(NS) is not None
    assert answers(client) == without  # off: exactly as without a model
    assert client.post(f"/v1/learning/{NS}/train", headers=ADMIN).status_code == 409
    assert client.post(f"/v1/learning/{NS}/on", headers=ADMIN).status_code == 200
    learning.load()
    assert answers(client) == with_model


def test_a_restart_loads_the_stored_model_and_does_not_retrain(database_url: str) -> None:
    with started(database_url) as first:
        tools = [{"name": n, "description": d} for n, (d, _) in PHRASES.items()]
        body = {"tools": tools, "namespace": NS}
        assert first.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        report(first)
        version = train(first)["version"]
        before = answers(first)
    with started(database_url) as second:
        services = services_of(second)
        learning = services.learning
        assert learning is not None
        held = learning.get(NS)
        assert held is not None and held.version == version
        refresh(services)
        learning.tick()  # the background's round: nothing new to train on
        assert learning.trainings == 0 and len(models(services)) == 1
        assert learned_parts(answers(second)) == learned_parts(before)


def test_a_replica_routes_with_the_model_another_promoted(postgres_url: str) -> None:
    """Two services on one Postgres, the poll an hour: the announcement loads it at once."""
    empty_database(postgres_url)
    with started(postgres_url) as a, started(postgres_url) as b:
        for replica in (a, b):
            listener = services_of(replica).listener
            assert listener is not None and listener.connected.wait(10)
        tools = [{"name": n, "description": d} for n, (d, _) in PHRASES.items()]
        body = {"tools": tools, "namespace": NS}
        assert a.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        until(lambda: services_of(b).index.get(NS) is not None)
        report(a)
        version = train(a)["version"]
        learning = services_of(b).learning
        assert learning is not None
        assert until(lambda: getattr(learning.get(NS), "version", None) == version) < 5
        refresh(services_of(b))
        assert learned_stages(answers(b)) > 0
        assert learned_parts(answers(b)) == learned_parts(answers(a))


def test_a_forgotten_tool_is_not_in_the_next_model(client: TestClient) -> None:
    """``DELETE /v1/memory`` of a tool: the next round retrains without its reports, though
    no new step came."""
    report(client)
    assert "create_invoice" in models_tools(client, train(client))
    forgotten = client.delete("/v1/memory/create_invoice", params={"namespace": NS}, headers=ADMIN)
    assert forgotten.status_code == 204
    learning = services_of(client).learning
    assert learning is not None
    refresh(services_of(client))
    learning.tick()  # rebuilt without them: the forget makes the namespace due
    assert learning.trainings == 2
    newest = models(services_of(client))[0]
    assert newest.version == 2 and "create_invoice" not in newest.tools
    assert len(newest.tools) == len(PHRASES) - 1 and newest.steps == 64


def models_tools(client: TestClient, model: dict[str, Any]) -> list[str]:
    stored = next(m for m in models(services_of(client)) if m.version == model["version"])
    return list(stored.tools)


def test_rollback_serves_the_previous_model_once(client: TestClient) -> None:
    assert client.post(f"/v1/learning/{NS}/rollback", headers=ADMIN).status_code == 409
    report(client)
    first = train(client)
    assert first["promoted"] is True
    services = services_of(client)
    learning = services.learning
    assert learning is not None
    held = learning.get(NS)
    assert held is not None
    with unit_of_work(services.session_factory) as session:  # a second promotion
        repository.add_model(
            session, NS, 2, held, held.ranker.dim, {"promoted": True}, 40, True, datetime.now(UTC)
        )
    learning.load()
    assert getattr(learning.get(NS), "version", None) == 2
    rolled = client.post(f"/v1/learning/{NS}/rollback", headers=ADMIN)
    assert rolled.status_code == 200, rolled.text
    assert rolled.json()["serving"]["version"] == first["version"]
    learning.load()
    assert getattr(learning.get(NS), "version", None) == first["version"]
    again = client.post(f"/v1/learning/{NS}/rollback", headers=ADMIN)
    assert again.status_code == 409 and set(again.json()["error"]) == {"code", "message", "details"}
    states = {m.version: m.state for m in models(services)}
    assert states == {first["version"]: "serving", 2: "rolled_back"}
    state = client.get("/v1/learning", params={"namespace": NS}, headers=ADMIN).json()
    assert state["serving"]["version"] == first["version"] and state["enabled"] is True
    assert [m["version"] for m in state["history"]] == [2, first["version"]]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/learning?namespace=nowhere"),
        ("post", "/v1/learning/nowhere/off"),
        ("post", "/v1/learning/nowhere/on"),
        ("post", "/v1/learning/nowhere/rollback"),
        ("post", "/v1/learning/nowhere/train"),
    ],
)
def test_an_unknown_namespace_is_a_404(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, path, headers=ADMIN)
    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "not_found"


def test_too_few_steps_is_a_refused_verdict_not_an_error(client: TestClient) -> None:
    model = train(client)
    assert model["promoted"] is False and model["digest"] is None
    assert "are needed" in model["reason"]


def test_the_overview_shows_the_learned_model(client: TestClient) -> None:
    report(client)
    model = train(client)
    train(client)  # a second challenger, judged against the first
    sign_in(client)
    page = client.get("/dashboard", params={"namespace": NS})
    assert page.status_code == 200, page.text
    text = page.text
    assert "Learned model" in text and f"version {model['version']}" in text
    assert f"{model['trained_on']} reports" in text
    without, with_model = model["hit@1"]["without"], model["hit@1"]["with"]
    assert f"{without * 100:.1f}%" in text and f"{with_model * 100:.1f}%" in text
    last = models(services_of(client))[0]
    assert f"version {last.version}," in text and html.escape(str(last.verdict["reason"])) in text


def test_the_background_round_trains_when_enough_steps_are_new(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    learning = services_of(client).learning
    assert learning is not None
    report(client, rounds=3)  # 15 steps: fewer than the 20 new ones a round waits for
    learning.tick()
    assert learning.trainings == 0
    report(client, rounds=16)  # 80 in all (the first 15 again, and 65 more)
    learning.tick()
    assert learning.trainings == 1 and learning.get(NS) is not None
    served = learning.get(NS)
    learning.tick()  # nothing new since
    assert learning.trainings == 1

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a training that fails")

    monkeypatch.setattr("app.learning.service.challenge", broken)
    learning.min_new_steps = 1
    report(client, rounds=17)
    learning.tick()  # logged; the model before keeps serving
    now = learning.get(NS)  # the same model (a replica's reload may hand a fresh copy of it)
    assert served is not None and now is not None
    assert (now.version, now.ranker.digest()) == (served.version, served.ranker.digest())
    assert learning.trainings == 1


def test_learning_off_in_the_settings_trains_and_serves_nothing(database_url: str) -> None:
    with started(database_url, learning=False) as client:
        tools = [{"name": n, "description": d} for n, (d, _) in PHRASES.items()]
        body = {"tools": tools, "namespace": NS}
        assert client.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        report(client)
        learning = services_of(client).learning
        assert learning is not None
        learning.tick()
        assert learning.trainings == 0 and learning.get(NS) is None
        assert learned_stages(answers(client)) == 0
        assert client.post(f"/v1/learning/{NS}/train", headers=ADMIN).status_code == 409
        state = client.get("/v1/learning", params={"namespace": NS}, headers=ADMIN).json()
        assert state["enabled"] is False and state["serving"] is None


def test_the_digest_is_the_rerankers(client: TestClient) -> None:
    report(client)
    model = train(client)
    learning = services_of(client).learning
    assert learning is not None
    held = learning.get(NS)
    assert held is not None and model["digest"] == held.ranker.digest()


def stored(services: Services) -> tuple[int, int, int]:
    """(rows, rows holding weights, bytes of weights) of the namespace's stored models."""
    with unit_of_work(services.session_factory) as session:
        rows = session.execute(
            select(LearnedModel.id, func.length(LearnedModel.weights)).where(
                LearnedModel.namespace == NS
            )
        ).all()
    sizes = [size for _, size in rows if size is not None]
    return len(rows), len(sizes), sum(sizes)


def test_looping_train_does_not_grow_storage(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 38 item 5: each training stored a whole matrix, refused ones too, and nothing
    deleted them. Now the serving and the previous model keep their weights, and a
    namespace keeps ``KEPT_VERDICTS`` verdicts besides."""
    monkeypatch.setattr(repository, "KEPT_VERDICTS", 3, raising=False)
    report(client)
    assert train(client)["promoted"] is True
    services = services_of(client)
    learning = services.learning
    assert learning is not None
    held = learning.get(NS)
    assert held is not None
    matrix = len(held.ranker.to_bytes())
    for version in range(2, 8):  # six more promotions, as retraining on new reports makes
        with unit_of_work(services.session_factory) as session:
            repository.add_model(
                session, NS, version, held, held.ranker.dim, {}, 80, True, datetime.now(UTC)
            )
    learning.load()
    for _ in range(3):
        train(client)  # refused or not: judged again
    after = stored(services)
    for _ in range(4):
        train(client)
    assert stored(services) == after  # the loop adds nothing
    rows, weighted, size = after
    assert rows <= 3 + 2 and weighted == 2 and size == 2 * matrix
    states = {m.version: m.state for m in models(services)}
    assert list(states.values()).count("serving") == 1


def test_reading_the_state_reads_no_weights(client: TestClient) -> None:
    """``GET /v1/learning`` read and hashed every listed matrix; the digest is stored."""
    report(client)
    model = train(client)
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = services_of(client).engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        state = client.get("/v1/learning", params={"namespace": NS}, headers=ADMIN)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert state.status_code == 200, state.text
    assert state.json()["serving"]["digest"] == model["digest"] is not None
    assert any("learned_models" in s for s in statements)
    assert not any("weights" in s for s in statements), statements


def test_purge_deletes_old_verdicts_and_keeps_what_serves(
    client: TestClient,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report(client)
    first = train(client)
    services = services_of(client)
    learning = services.learning
    assert learning is not None
    held = learning.get(NS)
    assert held is not None
    long_ago = datetime.now(UTC) - timedelta(days=400)
    with unit_of_work(services.session_factory) as session:
        for version in range(2, 6):  # old refused verdicts
            repository.add_model(session, NS, version, held, 4, {}, 80, False, long_ago)
        session.execute(
            update(LearnedModel)
            .where(LearnedModel.version == first["version"])
            .values(created_at=long_ago)
        )
    monkeypatch.setenv("TOOLREACH_DATABASE_URL", database_url)
    assert main(["purge", "--older-than", "30"]) == 0
    assert "3 learned-model verdicts" in capsys.readouterr().out
    kept = {m.version: m.state for m in models(services)}
    assert kept == {first["version"]: "serving", 5: "refused"}  # what serves, and the newest


def test_a_model_judged_before_bounded_influence_moves_nothing_and_is_retrained(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored model without a scope (from before migration 0012) serves no key after a
    restart (routes are as without learning), and the namespace is trained again at once,
    without new reports. The restarted process's rounds are the test's own: its background
    thread's first round may train too, and would race the test's round (two trainings)."""
    with started(database_url) as first:
        tools = [{"name": n, "description": d} for n, (d, _) in PHRASES.items()]
        body = {"tools": tools, "namespace": NS}
        assert first.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        report(first)
        trained = train(first)
        assert trained["promoted"] is True and trained["shared"] is True
        assert any(part for answer in learned_parts(answers(first)) for _, part in answer)
        with unit_of_work(services_of(first).session_factory) as session:
            session.execute(update(LearnedModel).values(confirmed=None, own=None))
    monkeypatch.setattr(LearningCache, "start", lambda self, poll, interval: self.load())
    with started(database_url) as second:
        services = services_of(second)
        learning = services.learning
        assert learning is not None and learning.get(NS) is None
        refresh(services)
        assert learned_stages(answers(second)) == 0
        assert learning.due() == [NS]
        learning.tick()
        assert learning.trainings == 1 and learning.due() == []
        assert models(services)[0].version == trained["version"] + 1


@pytest.mark.parametrize(
    ("method", "path", "schema"),
    [
        ("get", "/v1/learning", "LearningRead"),
        ("post", "/v1/learning/{namespace}/train", "LearningTrainRead"),
        ("post", "/v1/learning/{namespace}/rollback", "LearningRollbackRead"),
        ("post", "/v1/learning/{namespace}/off", "LearningSwitchRead"),
        ("post", "/v1/learning/{namespace}/on", "LearningSwitchRead"),
    ],
)
def test_the_openapi_document_describes_each_answer(
    client: TestClient, method: str, path: str, schema: str
) -> None:
    """Issue 39 item 4: the answers were ``dict[str, Any]``, an object of no fields."""
    document = client.get("/openapi.json").json()
    answer = document["paths"][path][method]["responses"]["200"]["content"]["application/json"]
    assert answer["schema"] == {"$ref": f"#/components/schemas/{schema}"}
    schemas = document["components"]["schemas"]
    assert set(schemas[schema]["properties"]) >= {"namespace"}
    model = schemas["LearnedModelRead"]["properties"]
    assert {"version", "state", "digest", "hit@1", "shared", "verdict", "served_at"} <= set(model)
    assert {"promoted", "reason", "shared", "other_keys"} <= set(
        schemas["VerdictRead"]["properties"]
    )


def test_every_answer_is_its_documented_shape(client: TestClient) -> None:
    """What the endpoints answer reads back into their models, aliases and all."""
    report(client)
    model = train(client)
    assert set(model) >= {"version", "state", "digest", "hit@1", "shared", "verdict"}
    assert model["hit@1"]["with"] == model["verdict"]["challenger"]["hit@1"]
    state = client.get("/v1/learning", params={"namespace": NS}, headers=ADMIN).json()
    assert state["serving"] == model and state["history"] == [model]
    switched = client.post(f"/v1/learning/{NS}/off", headers=ADMIN).json()
    assert switched == {"namespace": NS, "enabled": False}
