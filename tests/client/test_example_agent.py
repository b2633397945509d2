"""The example agent (examples/agent) run against the real service by the scripted model:
every correction the loop makes, and every run counted in /v1/stats."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from toolreach_client import AsyncToolReach, ToolReach

from tests.client.conftest import ADMIN_KEY, AGENT_KEY, REPO, Service, settled_stats

sys.path.insert(0, str(REPO / "examples" / "agent"))
import react_agent
import scripted_model as sm


@pytest.fixture
def transcript() -> Iterator[list[str]]:
    yield []


def run(
    service: Service,
    namespace: str,
    model: sm.ScriptedModel,
    log: list[str],
    task: str = sm.TASK,
    **options: Any,
) -> str:
    async def go() -> str:
        async with AsyncToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as client:
            executor = options.pop("execute", None)
            agent = react_agent.Agent(client, model, executor, log=log.append, **options)
            return await agent.run(task)

    return asyncio.run(go())


def test_the_demo_run_corrects_itself_and_is_counted(
    service: Service, admin: ToolReach, namespace: str, transcript: list[str]
) -> None:
    model = sm.demo_model()
    answer = run(service, namespace, model, transcript)
    text = "\n".join(transcript)
    # The answer says what the tools answered, and that two steps were not done.
    assert answer == (
        "Track the parcel of order o100999: not done (order o100999 has not been handed to a "
        "carrier). Paris, FR: 12 °C, light rain. Current weather in Atlantis: not done (no "
        "place matches 'Atlantis'). Convert 250 USD to EUR: 230.00 EUR. Order o100999: "
        "user_id u1042, status paid."
    )

    # A wrong name: refused with did-you-mean, then corrected.
    assert "refused: trackShipment" in text and "did you mean track_shipment?" in text
    # Bad arguments: refused with the schema's errors, then corrected.
    assert "refused: convert_currency" in text and "'from' was unexpected" not in text
    assert "did you mean 'from_currency' instead of 'from'?" in text
    # The card's general row is about `amount`: it is offered for amount's problem only.
    [refused] = [line for line in transcript if "refused: convert_currency" in line]
    assert refused.count("INVALID_ARGUMENT: Fix the argument and retry.") == 1
    assert "(expected number, e.g. 250; INVALID_ARGUMENT" in refused
    assert '"converted_amount": 230.0' in text
    # The failing tool's card suggestion reached the planner, which followed it.
    assert "Call get_order_details to tell the user the order status" in model.prompts[1]
    assert model.turns == [] and sm.DETAILS in text.split("turn 2")[1]
    # In parallel: two of the four steps failed, the other two results are kept.
    first_turn = model.prompts[1]
    assert '"light rain"' in first_turn and "LOCATION_NOT_FOUND" in first_turn
    assert "230.0" in first_turn and "NOT_YET_SHIPPED" in first_turn
    # The model saw only the routed tools of each step.
    assert all(len(names) == 3 for seen in model.offered.values() for names in seen)
    assert "track_shipment" in model.offered[sm.TRACK][0]

    stats = settled_stats(admin, namespace, routes=5, feedback=5)
    assert (stats.routes, stats.feedback, stats.success, stats.miss) == (5, 5, 3, 0)
    assert stats.hit_at_1 == 5


def test_a_step_that_crashes_loses_no_other_result(
    service: Service, admin: ToolReach, namespace: str, transcript: list[str]
) -> None:
    # search_users has no local implementation: its step raises, the weather step stands.
    users, weather = "Find the account of maria.garcia@example.com", sm.PARIS
    model = sm.ScriptedModel(
        turns=[[users, weather], "done"],
        calls={
            users: [("search_users", {"query": "maria.garcia@example.com"})],
            weather: [("get_current_weather", {"location": "Paris, FR"})],
        },
    )
    assert run(service, namespace, model, transcript) == "done"
    assert "KeyError" in model.prompts[1] and '"light rain"' in model.prompts[1]
    stats = settled_stats(admin, namespace, routes=2, feedback=1)
    assert (stats.routes, stats.feedback, stats.success) == (2, 1, 1)


def test_calls_that_stay_invalid_report_none_fit_and_turns_are_bounded(
    service: Service, admin: ToolReach, namespace: str, transcript: list[str]
) -> None:
    bad = ("convert_currency", {"amount": -5, "from_currency": "usd", "to_currency": "EUR"})
    model = sm.ScriptedModel(
        turns=[[sm.CONVERT], [sm.CONVERT], [sm.CONVERT]], calls={sm.CONVERT: [bad] * 6}
    )
    answer = run(service, namespace, model, transcript, max_turns=2, max_repairs=2)
    assert answer == "I could not finish the task within the step limit."
    assert transcript[-1] == "stopped: out of turns"
    assert "\n".join(transcript).count("refused: convert_currency") == 6
    stats = settled_stats(admin, namespace, routes=2, feedback=2)
    assert (stats.none_fit, stats.feedback) == (2, 2)


def test_the_agent_runs_tools_through_the_gateway(
    service: Service, admin: ToolReach, namespace: str, transcript: list[str]
) -> None:
    model = sm.ScriptedModel(
        turns=[[sm.PARIS], "done"],
        calls={sm.PARIS: [("get_current_weather", {"location": "Paris, FR"})]},
    )
    model.turns[-1] = sm.report  # the answer is written from what the agent got
    answer = run(service, namespace, model, transcript, execute=react_agent.through_gateway)
    # The demo cards have no source: the gateway's structured error is what the agent sees,
    # and what it says: no weather it never got.
    assert "not_callable" in model.prompts[1]
    assert answer.startswith("Current weather in Paris, FR: not done (")
    assert "12" not in answer and "light rain" not in answer
    stats = settled_stats(admin, namespace, routes=1, feedback=1)
    assert (stats.routes, stats.feedback) == (1, 1)  # the call was the step's report


def example(service: Service, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """react_agent.py as a user runs it, in its folder, against the test service."""
    environment = {
        **os.environ,
        "TOOLREACH_URL": service.url,
        "TOOLREACH_API_KEY": AGENT_KEY,
        "PYTHONPATH": str(REPO / "clients" / "python" / "src"),
        **env,
    }
    environment.pop("OPENAI_API_KEY", None)
    command = [sys.executable, "react_agent.py", *argv]
    folder = REPO / "examples" / "agent"
    return subprocess.run(
        command, cwd=folder, env=environment, capture_output=True, text=True, timeout=300
    )


def test_the_gateway_demo_runs_end_to_end_through_a_real_source(
    service: Service, admin: ToolReach
) -> None:
    """--gateway: the demo MCP server is started, registered as a source, and every tool
    runs there through POST /v1/call, whose answers are the steps' reports."""
    done = example(service, "--scripted", "--gateway", TOOLREACH_ADMIN_KEY=ADMIN_KEY)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Traceback" not in done.stderr
    assert '"temperature": 12.0' in out and '"converted_amount": 230.0' in out
    assert "NOT_YET_SHIPPED: order o100999 has not been handed to a carrier." in out
    answer = out.split("answer: ", 1)[1]
    assert "Paris, FR: 12 °C, light rain." in answer and "230.00 EUR" in answer
    assert "Current weather in Atlantis: not done (LOCATION_NOT_FOUND" in answer
    stats = settled_stats(admin, "agent-demo", routes=5, feedback=5)
    assert (stats.routes, stats.feedback, stats.success) == (5, 5, 3)
    assert admin.tools.list(namespace="agent-demo").total == 0  # the source was taken away
    # Issue 42 item 10: the namespace it leaves (0 tools, its history) is said, with where
    assert "stay in namespace 'agent-demo', listed with 0 tools until the next run" in out
    assert f"{service.url}/dashboard?namespace=agent-demo&range=all" in out


def test_help_and_a_missing_key_end_without_a_traceback(service: Service) -> None:
    helped = example(service, "--help")
    assert helped.returncode == 0 and "--scripted" in helped.stdout and "--gateway" in helped.stdout
    refused = example(service, "what is 250 USD in EUR?")
    assert refused.returncode == 1  # SystemExit with a message
    assert "set OPENAI_API_KEY" in refused.stderr and "--scripted" in refused.stderr
    assert "Traceback" not in refused.stderr
    no_admin = example(service, "--scripted", "--gateway")
    assert no_admin.returncode != 0 and "set TOOLREACH_ADMIN_KEY" in no_admin.stderr
    assert "Traceback" not in no_admin.stderr
    # No service there: each step is observed as not done, and the answer says so.
    nowhere = example(service, "--scripted", TOOLREACH_URL="http://127.0.0.1:9")
    assert nowhere.returncode == 0 and "Traceback" not in nowhere.stderr + nowhere.stdout
    assert "Paris, FR: not done (TransportError" in nowhere.stdout.split("answer: ")[1]


def test_a_plan_in_prose_is_the_answer() -> None:
    class Prose:
        async def complete(self, messages: list[Any], tools: Any) -> dict[str, Any]:
            return {"role": "assistant", "content": "Paris is sunny today."}

    async def go() -> str:
        async with AsyncToolReach("http://127.0.0.1:9") as client:  # never reached
            return await react_agent.Agent(client, Prose(), log=lambda _: None).run("weather?")

    assert asyncio.run(go()) == "Paris is sunny today."
