"""`toolreach simulate`: an agent replaying a dataset over HTTP fills the statistics."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli.evaluate import safe_name
from app.cli.main import main
from app.cli.simulate import SimulateOptions, pick_choice, simulate
from tests.api.loop_support import VIEWER, services_of
from tests.conftest import ADMIN_KEY, AGENT, AGENT_KEY

TOOLS = [
    {"name": "WeatherNow", "description": "Current weather for a city.", "parameters": None},
    {"name": "PDF&URLTool", "description": "Summarise a PDF document found at a URL."},
    {"name": "EmailSender", "description": "Send an email message to someone."},
    {"name": "Broken"},  # no description: rejected, and its queries skipped
    {"name": "EmailSender", "description": "A second copy: rejected, the first one stays."},
]
QUERIES = [
    ("what is the weather in Lyon", ["WeatherNow"]),
    ("summarise this pdf link", ["PDF&URLTool"]),
    ("email my landlord", ["EmailSender"]),
    ("weather in Nice today", ["WeatherNow"]),
    ("send a message by email to Bob", ["EmailSender"]),
    ("do the broken thing", ["Broken"]),
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    (tmp_path / "tools.jsonl").write_text("\n".join(json.dumps(t) for t in TOOLS) + "\n")
    lines = [json.dumps({"query": q, "relevant": r}) for q, r in QUERIES]
    (tmp_path / "queries.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_simulate_registers_routes_and_reports(loop: TestClient, dataset: Path) -> None:
    options = SimulateOptions(
        data=dataset,
        namespace="sim",
        failure_rate=0.5,
        seed=1,
        admin_key=ADMIN_KEY,
        agent_key=AGENT_KEY,
    )
    summary = simulate(loop, options)
    draws = random.Random(1)
    errors = sum(draws.random() < 0.5 for _ in range(5))
    assert (summary.tools, summary.routes) == (3, 5)
    assert summary.rejected_tools == ["Broken", "EmailSender"]
    assert sum(summary.verdicts.values()) == 5 and summary.failed_requests == 0
    assert summary.outcomes == {"error": errors, "success": 5 - errors}
    assert any("routed 5 queries, reported 5 choices" in line for line in summary.lines())

    again = simulate(loop, options)  # registering again changes nothing
    assert again.tools == 3 and again.routes == 5
    services_of(loop).events.flush()
    stats = loop.get("/v1/stats", params={"namespace": "sim"}, headers=VIEWER).json()
    assert (stats["routes"], stats["feedback"], stats["success"]) == (10, 10, 2 * (5 - errors))
    names = {t["name"] for t in stats["tools"]}
    pdf = "PDF_URLTool"  # its refused character made '_', and said
    assert summary.renamed_tools == {"PDF&URLTool": pdf}
    assert pdf in names and names <= {"WeatherNow", pdf, "EmailSender"}
    assert "registered 3 tools (2 rejected, 1 renamed)" in summary.lines()


def test_names_the_registry_refuses_are_renamed_apart_and_said(
    loop: TestClient, tmp_path: Path
) -> None:
    """天气查询 became '____' silently, with "0 rejected"; two Chinese names of one length
    would have been one tool."""
    tools = [
        {"name": "天气查询", "description": "查询城市的实时天气。"},
        {"name": "汇率查询", "description": "查询两种货币之间的实时汇率。"},
        {"name": "get_weather", "description": "Current weather for a city."},
        {"name": "fx&rate", "description": "An exchange rate."},  # '_' would make it fx_rate:
        {"name": "fx_rate", "description": "Another exchange rate."},  # kept apart by a hash
    ]
    (tmp_path / "tools.jsonl").write_text("\n".join(json.dumps(t) for t in tools) + "\n")
    asked = [("上海现在的天气怎么样", ["天气查询"]), ("美元兑人民币汇率", ["汇率查询"])]
    lines = [json.dumps({"query": q, "relevant": r}, ensure_ascii=False) for q, r in asked]
    (tmp_path / "queries.jsonl").write_text("\n".join(lines) + "\n")
    options = SimulateOptions(
        data=tmp_path, namespace="zh", admin_key=ADMIN_KEY, agent_key=AGENT_KEY
    )
    summary = simulate(loop, options)
    weather, rate = safe_name("天气查询"), safe_name("汇率查询")
    assert weather != rate and weather.startswith("_____") and len(weather) == 13
    fx = safe_name("fx&rate")
    assert fx == "fx_rate" and summary.renamed_tools["fx&rate"].startswith("fx_rate_")
    assert summary.tools == 5 and summary.rejected_tools == []
    assert set(summary.renamed_tools) == {"天气查询", "汇率查询", "fx&rate"}
    assert (summary.renamed_tools["天气查询"], summary.renamed_tools["汇率查询"]) == (weather, rate)
    said = "\n".join(summary.lines())
    assert "registered 5 tools (0 rejected, 3 renamed)" in said
    assert f"'天气查询' → {weather!r}" in said and "A-Z a-z 0-9 _ . : -" in said
    listed = loop.get("/v1/tools", params={"namespace": "zh"}, headers=AGENT).json()
    registered = [weather, rate, "get_weather", "fx_rate", summary.renamed_tools["fx&rate"]]
    assert sorted(t["name"] for t in listed["items"]) == sorted(registered)
    assert summary.routes == 2 and sum(summary.verdicts.values()) == 2


def test_pick_choice_prefers_an_offered_label() -> None:
    assert pick_choice({"b", "c"}, ["a", "c"]) == "c"
    assert pick_choice({"c", "b"}, ["a"]) == "b"


def test_simulate_command_reports_an_unreachable_service(
    dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "--data", str(dataset), "--url", "http://127.0.0.1:9"]
    assert main([*argv, "--admin-key", ADMIN_KEY]) == 2
    assert "cannot reach http://127.0.0.1:9" in capsys.readouterr().err
    assert main(["simulate", "--data", str(dataset / "missing")]) == 2
