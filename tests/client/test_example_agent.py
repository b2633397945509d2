"""The example agent (examples/agent) run against the real service by the scripted model:
every correction the loop makes, and every run counted in /v1/stats."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from toolreach_client import AsyncToolReach, ToolReach

from tests.client.conftest import AGENT_KEY, REPO, Service, settled_stats

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
    assert answer.startswith("Order o100999 is paid")

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
    run(service, namespace, model, transcript, execute=react_agent.through_gateway)
    # The demo cards have no source: the gateway's structured error is what the agent sees.
    assert "not_callable" in model.prompts[1]
    stats = settled_stats(admin, namespace, routes=1, feedback=1)
    assert (stats.routes, stats.feedback) == (1, 1)  # the call was the step's report


def test_a_plan_in_prose_is_the_answer() -> None:
    class Prose:
        async def complete(self, messages: list[Any], tools: Any) -> dict[str, Any]:
            return {"role": "assistant", "content": "Paris is sunny today."}

    async def go() -> str:
        async with AsyncToolReach("http://127.0.0.1:9") as client:  # never reached
            return await react_agent.Agent(client, Prose(), log=lambda _: None).run("weather?")

    assert asyncio.run(go()) == "Paris is sunny today."
