"""The live index follows writes by merging them into the current index (issue 21): after each
sync of random creates, updates and deletes, routes answer exactly as on a replica that
just loaded the same registry from scratch; a large namespace's int8 copy is derived from the
last one at once and refitted once writes settle."""

from __future__ import annotations

import random
import time

import numpy as np

from app.db import unit_of_work
from app.embedding.encoders import make_encoder
from app.route.service import route_step
from app.schemas import RouteRequest
from app.services import Services, build_services
from app.tools.catalog import delete_card, write_cards
from registry.card import ToolCard
from tests.conftest import make_settings
from tests.waiting import until

WORDS = [
    "weather",
    "city",
    "order",
    "refund",
    "email",
    "meeting",
    "flight",
    "hotel",
    "file",
    "report",
    "ticket",
    "stock",
]
QUERIES = ["weather in the city", "refund my order", "book a flight and a hotel", "report"]


def card(rng: random.Random, name: str, namespace: str) -> ToolCard:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
    field = rng.choice(WORDS)
    return ToolCard(
        name=name,
        namespace=namespace,
        description=f"Tool {name}: {words}.",
        tags=rng.sample(["x", "y"], rng.randint(0, 1)),
        parameters={
            "type": "object",
            "properties": {field: {"type": "string", "description": f"the {field}"}},
            "required": [field] if rng.random() < 0.5 else [],
        },
    )


def answers(services: Services, namespace: str) -> list[object]:
    out = []
    for query in QUERIES:
        for k, tags in ((3, None), (10, ["x"])):
            request = RouteRequest(query=query, k=k, namespace=namespace, tags=tags)
            found = route_step(request, services.routing).candidates
            out.append([(c.name, c.score, c.stages, c.missing_required) for c in found])
    return out


def test_random_writes_answer_as_a_fresh_load(sqlite_url: str) -> None:
    from tests.conftest import empty_database

    empty_database(sqlite_url)
    rng = random.Random(21)
    services = build_services(make_settings(sqlite_url), make_encoder("fake"))
    live: dict[tuple[str, str], bool] = {}
    serial = 0
    for _ in range(30):
        with unit_of_work(services.session_factory) as session:
            for _ in range(rng.choice([1, 1, 3, 8])):
                namespace = rng.choice(["default", "other"])
                names = sorted(n for ns, n in live if ns == namespace)
                kind = rng.choice(["create", "update", "delete"]) if names else "create"
                if kind == "delete":
                    name = rng.choice(names)
                    delete_card(session, namespace, name)
                    del live[(namespace, name)]
                    continue
                if kind == "create":
                    serial += 1
                    name = f"{rng.choice(['t', 'T', 'a'])}_{serial}"
                else:
                    name = rng.choice(names)
                write_cards(session, services.encoder, [card(rng, name, namespace)])
                live[(namespace, name)] = True
        services.index.sync()
        fresh = build_services(make_settings(sqlite_url), make_encoder("fake"))
        for namespace in ("default", "other"):
            ours, theirs = services.index.get(namespace), fresh.index.get(namespace)
            if theirs is None:
                continue
            assert ours is not None
            assert ours.index.names == theirs.index.names
            assert ours.index.embeddings.tobytes() == theirs.index.embeddings.tobytes()
            assert dict(ours.summaries) == dict(theirs.summaries)
            assert answers(services, namespace) == answers(fresh, namespace)
        fresh.close()
    services.close()


def test_a_large_namespace_derives_its_int8_copy_and_refits_it_once_writes_settle(
    sqlite_url: str,
) -> None:
    from tests.conftest import empty_database

    empty_database(sqlite_url)
    rng = random.Random(3)
    settings = make_settings(sqlite_url, cosine_int8_min_tools=40, cosine_int8_dims=8)
    services = build_services(settings, make_encoder("fake"))
    services.cosines._refits._settle = 0.2  # (1 s by default)
    with unit_of_work(services.session_factory) as session:
        write_cards(session, services.encoder, [card(rng, f"t{i}", "default") for i in range(60)])
    services.index.sync()
    first = services.index.get("default")
    assert first is not None and services.cosines.prepared(first.index.embeddings)
    fit = services.cosines._int8[id(first.index.embeddings)]
    for i in range(8):  # 8 of 60 rows changed: past a tenth, a refit is due
        with unit_of_work(services.session_factory) as session:
            write_cards(session, services.encoder, [card(rng, f"t{i}", "default")])
        services.index.sync()
        snapshot = services.index.get("default")
        assert snapshot is not None
        assert until(lambda s=snapshot: services.cosines.prepared(s.index.embeddings))
        copy = services.cosines._int8[id(snapshot.index.embeddings)]
        if i < 6:
            assert copy.basis is fit.basis  # derived: the first fit, no new directions
    deadline = time.monotonic() + 30
    while services.cosines.refitting() and time.monotonic() < deadline:
        time.sleep(0.05)
    refitted = services.cosines._int8[id(snapshot.index.embeddings)]
    assert refitted.basis is not fit.basis and refitted.drift == 0
    fresh = build_services(settings, make_encoder("fake"))
    fresh_snapshot = fresh.index.get("default")
    assert fresh_snapshot is not None
    fresh_copy = fresh.cosines._int8[id(fresh_snapshot.index.embeddings)]
    assert refitted.basis is not None and fresh_copy.basis is not None
    np.testing.assert_array_equal(refitted.basis, fresh_copy.basis)
    assert answers(services, "default") == answers(fresh, "default")
    fresh.close()
    services.close()
