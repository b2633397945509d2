"""Reports on a replay (fake encoder): without a promoted model they move no route (the usage
prior and query memory are only a reranker's features); a guarded reranker learns from them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from app.cli.eval_prior import format_replay, replay_prior
from app.embedding.encoders import make_encoder
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
)
from tests.conftest import make_settings

# Twin cards: the fake encoder and BM25 score them exactly alike for the weather queries.
SAME = "Current weather in a city, right now: temperature, wind and rain."
DOCS = [
    ToolDoc("weather_live", SAME, SAME),
    ToolDoc("weather_local", SAME, SAME),
    ToolDoc("send_email", "Send an email.", "Send an email to someone."),
    ToolDoc("translate_text", "Translate.", "Translate a text into another language."),
]
CITIES = ["Paris", "Oslo", "Rome", "Lima", "Kyiv", "Cairo", "Quito", "Dakar", "Hanoi", "Bern"]


def ranked(query: str) -> list[str]:
    encoder = make_encoder("fake")
    config = RouterConfig()
    index = RouterIndex.build(DOCS, encoder.encode([embedding_text(d) for d in DOCS]), config)
    vector = np.asarray(encoder.encode([query])[0], dtype=np.float32)
    return [
        c.name for c in Router(config).route(NamespaceView(index), query, vector, RouteOptions(k=4))
    ]


def write_dataset(folder: Path, label: str) -> Path:
    tools = [{"name": d.name, "description": d.description} for d in DOCS]
    queries = [{"query": f"current weather in {city}", "relevant": [label]} for city in CITIES]
    queries.append({"query": "translate this into French", "relevant": ["translate_text"]})
    queries.append({"query": "send an email to my boss", "relevant": ["send_email"]})
    (folder / "tools.jsonl").write_text("\n".join(json.dumps(t) for t in tools) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    return folder


def test_replayed_feedback_without_a_model_changes_no_route(tmp_path: Path) -> None:
    tie = ranked("current weather in Paris")
    assert sorted(tie[:2]) == ["weather_live", "weather_local"]
    loser = tie[1]  # the agents always use the other twin
    data = write_dataset(tmp_path, loser)
    settings = make_settings(f"sqlite:///{tmp_path}/unused.db")
    report = replay_prior(data, settings, 0.5, encoder=make_encoder("fake"))
    results = report["results"]
    assert report["feedback_queries"] == 6 and report["held_out_queries"] == 6
    assert report["tools_reported"] >= 1 and report["remembered_steps"] >= 1
    assert results["cold_start"] == results["no_prior"]
    table = format_replay(report)
    assert table.count("\n") == 7 and "no_prior      seen" in table


def test_a_replay_with_learning_trains_a_guarded_reranker_the_reports_agree_with(
    tmp_path: Path,
) -> None:
    """Two weather cards worded apart among 33; the agents' weather steps all use the one the
    router puts second (the other is reported for rain radar steps): the guard promotes a
    reranker that puts it first."""
    tools = [
        {"name": "weather_now", "description": "Current weather in a city: temperature and rain."},
        {
            "name": "weather_town",
            "description": "Current weather for a town: temperature and wind.",
        },
        {"name": "send_email", "description": "Send an email to someone."},
        *(  # a namespace of some size: the fusion's z-scores are those of a real one
            {"name": f"other_{n}", "description": f"Manage {thing} records, kind {n}."}
            for n, thing in enumerate(["invoice", "ticket", "order", "contact", "file"] * 6)
        ),
    ]
    docs = [ToolDoc(t["name"], t["description"], t["description"]) for t in tools]
    encoder = make_encoder("fake")
    index = RouterIndex.build(
        docs, encoder.encode([embedding_text(d) for d in docs]), RouterConfig()
    )
    steps = [f"current weather in {city} for day {n}" for n in range(6) for city in CITIES]
    vector = np.asarray(encoder.encode([steps[0]])[0], dtype=np.float32)
    second = [
        c.name
        for c in Router(RouterConfig()).route(
            NamespaceView(index), steps[0], vector, RouteOptions(k=3)
        )
    ][1]
    first = "weather_town" if second == "weather_now" else "weather_now"
    queries = [{"query": step, "relevant": [second]} for step in steps]
    # The first twin has reports too, of another kind of step: a model never puts a tool
    # over a cold first nobody reported (it may be the right tool of an unreported kind).
    queries += [
        {"query": f"is it raining in {city} radar {n}", "relevant": [first]}
        for n in range(2)
        for city in CITIES
    ]
    (tmp_path / "tools.jsonl").write_text("\n".join(json.dumps(t) for t in tools) + "\n")
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    settings = make_settings(f"sqlite:///{tmp_path}/unused.db")
    report = replay_prior(tmp_path, settings, 0.5, encoder=encoder, learn=True)
    verdict = report["learning"]["verdict"]
    assert verdict["promoted"] is True, verdict
    results = report["results"]
    assert results["learned"]["seen"]["hit@1"] > results["no_prior"]["seen"]["hit@1"]
    assert results["learned"]["all"]["ece"] is not None
    assert "learning: " in format_replay(report)
