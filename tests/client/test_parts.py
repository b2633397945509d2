"""The client's side of steps of several parts and of batches, against the real service
(fake encoder, the demo catalog): `Step.parts`, each candidate's `part`, `split`, and
`route_batch` in the sync and async clients."""

from __future__ import annotations

import asyncio

import pytest
from toolreach_client import AsyncToolReach, InvalidInput, ToolReach
from toolreach_client.models import RouteRequest

from tests.client.conftest import AGENT_KEY, DEMO, Service, settled_stats

STEP = "what is the weather in Paris right now and convert 250 euros to Japanese yen"


def test_a_step_of_several_parts_says_which_tool_serves_which(agent: ToolReach) -> None:
    step = agent.route(STEP, k=2)
    assert step.parts == [
        "what is the weather in Paris right now",
        "convert 250 euros to Japanese yen",
    ]
    assert step.for_part(0) == ["get_current_weather"]
    assert step.for_part(1) == ["convert_currency"]
    assert {c.part for c in step.candidates} == {0, 1}
    whole = agent.route(STEP, k=2, split=False)
    assert whole.parts == [] and all(c.part is None for c in whole.candidates)
    one = agent.route("what is the weather in Paris right now", k=2)
    assert one.parts == [] and one.answer.parts is None


def test_route_batch_gives_one_step_each(
    agent: ToolReach, admin: ToolReach, namespace: str
) -> None:
    steps = agent.route_batch(
        ["what is the weather in Paris right now", {"query": "convert 250 euros to yen", "k": 1}],
        k=2,
    )
    assert [len(s.candidates) for s in steps] == [2, 1]
    assert steps[0].names[0] == "get_current_weather" and steps[1].names == ["convert_currency"]
    assert steps[0].route_id != steps[1].route_id
    assert all(s.namespace == namespace for s in steps)
    for step in steps:  # each a route of its own, reported on its own
        report = step.report(step.names[0], "success")
        assert report is not None and report.verdict == "hit_at_1"
    stats = settled_stats(admin, namespace, routes=2, feedback=2)
    assert stats.hit_at_1 == 2


def test_the_batchs_namespace_applies_to_every_step_that_names_none(
    service: Service, admin: ToolReach, namespace: str
) -> None:
    """Issue 42 item 5: `route_batch([...], namespace=...)` routed a dict step in the
    client's namespace (`default`); the batch's namespace (and k) are every step's
    defaults, a step's own fields win."""
    other = admin.tools.bulk(DEMO[:1], namespace=f"{namespace}-other").created
    with ToolReach(service.url, api_key=AGENT_KEY) as client:  # the client's is `default`
        steps = client.route_batch(
            [
                "what is the weather in Paris right now",
                {"query": "convert 250 euros to yen"},
                RouteRequest(query="convert 250 euros to yen"),
                {"query": "weather", "namespace": f"{namespace}-other", "k": 3},
            ],
            namespace=namespace,
            k=1,
        )
    assert [s.namespace for s in steps] == [namespace] * 3 + [f"{namespace}-other"]
    assert [len(s.candidates) for s in steps] == [1, 1, 1, 1]
    assert steps[1].names == steps[2].names == ["convert_currency"]
    assert steps[3].names == other


def test_a_bad_batch_is_refused_before_it_is_sent_or_by_the_service(agent: ToolReach) -> None:
    with pytest.raises(ValueError):
        agent.route_batch(["weather"] * 17)
    with pytest.raises(InvalidInput):
        agent.route_batch([{"query": "weather", "namespace": "x" * 70}])


def test_the_async_client_routes_a_batch(service: Service, namespace: str) -> None:
    async def main() -> list[list[str]]:
        async with AsyncToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as client:
            steps = await client.route_batch([STEP, "convert 250 euros to yen"], k=2)
            assert steps[0].parts and not steps[1].parts
            return [s.names for s in steps]

    names = asyncio.run(main())
    assert set(names[0]) == {
        "get_current_weather",
        "convert_currency",
    }
