"""bench.tools.fit_confidence, which writes app/routing/confidence_fit.py, on small data: two
made-up datasets in the shapes of MetaTool (queries_all less queries) and Seal-Tools (dev-*),
the fake encoder, a few sampled namespaces. The full fit runs for minutes (docs/ROUTING.md)."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.embedding.encoders import FakeEncoder
from app.routing import RouterConfig
from app.routing.confidence import MONOTONE, ConfidenceModel, Evidence
from bench.tools.fit_confidence import Plan, fit_logistic, fit_sets, tuning_queries, write_model

TOPICS = [
    ("weather", "forecast rain temperature city"),
    ("flight", "airline ticket departure airport"),
    ("invoice", "billing payment amount customer"),
    ("calendar", "meeting schedule event invite"),
    ("email", "message inbox send recipient"),
    ("recipe", "cooking ingredients dish kitchen"),
    ("stock", "shares market price ticker"),
    ("translate", "language text words french"),
    ("music", "song playlist artist album"),
    ("map", "route directions distance street"),
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def write_set(folder: Path, prefix: str, metatool: bool) -> Path:
    """Ten tools and three queries for each; a third of them held out of the tuning split."""
    rng = random.Random(len(prefix))
    folder.mkdir()
    tools = [
        {"name": f"{name}_tool", "description": f"The {name} tool: {words}."}
        for name, words in TOPICS
    ]
    queries = [
        {
            "id": f"{prefix}{n}",
            "query": f"please {' '.join(rng.sample(words.split(), 2))}, case {n}",
            "relevant": [f"{name}_tool"],
        }
        for n, (name, words) in enumerate(TOPICS * 3)
    ]
    write_jsonl(folder / "tools.jsonl", tools)
    if metatool:  # the evaluation sample is queries.jsonl; the tuning split is the rest
        write_jsonl(folder / "queries_all.jsonl", queries)
        write_jsonl(folder / "queries.jsonl", queries[::3])
    else:  # the tuning split is dev-*
        for n, query in enumerate(queries):
            query["id"] = f"{'test' if n % 3 == 0 else 'dev'}-{n}"
        write_jsonl(folder / "queries.jsonl", queries)
    return folder


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("fit")
    sets = {
        "metatool": write_set(root / "metatool", "m", metatool=True),
        "seal-tools": write_set(root / "seal", "s", metatool=False),
    }
    sizes = {"metatool": (4,), "seal-tools": (4, 6)}
    plan = Plan(sizes=sizes, per_size=12, per_namespace=4, no_fit=10)
    return fit_sets(sets, FakeEncoder(64), RouterConfig(), root / "cache", plan=plan), root


def test_the_tuning_splits_leave_the_evaluation_queries_out(tmp_path: Path) -> None:
    meta = write_set(tmp_path / "m", "m", metatool=True)
    seal = write_set(tmp_path / "s", "s", metatool=False)
    tuning = tuning_queries(meta)
    held_out = {json.loads(line)["query"] for line in (meta / "queries.jsonl").open()}
    assert len(tuning) == 20 and not {q["query"] for q in tuning} & held_out  # 30 less 10
    assert {q["id"][:4] for q in tuning_queries(seal)} == {"dev-"}


def test_the_fit_gives_a_confidence_in_range_that_more_evidence_never_lowers(
    fitted: Any,
) -> None:
    result, _ = fitted
    model: ConfidenceModel = result.model
    assert model.encoder == "fake-hash-64"
    for role in (model.leader, model.others):
        assert role.shapes, "no feature varied on the small sets"
        for shape in role.shapes:
            if shape.feature in MONOTONE:
                assert all(slope >= 0 for slope in shape.slopes), shape
    assert 0.0 <= result.threshold < 1.0
    assert set(result.summary["auroc"]) == {"metatool", "seal-tools"}
    assert result.nofit["metatool"] and result.nofit["seal-tools"]


def test_the_written_module_holds_the_model_it_was_fit_as(fitted: Any) -> None:
    result, root = fitted
    path = root / "confidence_fit.py"
    write_model(path, result.model, result.threshold, "python -m bench.tools.fit_confidence ...")
    spec = importlib.util.spec_from_file_location("written_fit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert result.threshold == module.RECOMMENDED_MIN_CONFIDENCE
    assert module.CONFIDENCE_MODEL.encoder == result.model.encoder
    assert "python -m bench.tools.fit_confidence" in path.read_text()
    evidence = [e for tops in result.nofit.values() for e in (t.evidence for t in tops)]
    for e in evidence[:20]:
        confidence: float = module.CONFIDENCE_MODEL.confidence(e)
        assert 0.0 <= confidence <= 1.0
        assert confidence == pytest.approx(result.model.confidence(e), abs=1e-5)
        assert isinstance(e, Evidence)


def test_a_monotone_coefficient_that_the_data_wants_negative_is_held_at_zero() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400, 2))
    y = (x[:, 0] - x[:, 1] + 0.3 * rng.standard_normal(400) > 0).astype(np.float64)
    weights = np.ones(400)
    free, _ = fit_logistic(x, y, weights, np.array([False, False]))
    assert free[0] > 0 > free[1]
    held, _ = fit_logistic(x, y, weights, np.array([True, True]))
    assert held[0] > 0 and held[1] == 0.0
