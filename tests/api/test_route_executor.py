"""The route executor: waiting steps share one model call; failures and shutdown are contained."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

import app.route.executor as route_executor
from app.db import unit_of_work
from app.embedding.cosines import Int8Matrix
from app.embedding.encoders import FakeEncoder
from app.errors import Overloaded, Unavailable
from app.main import create_app
from app.route.deps import RouteDeps
from app.route.executor import RouteExecutor
from app.route.service import route_step
from app.schemas import RouteRequest
from app.services import Services, build_services
from app.tools.catalog import write_cards
from registry.card import ToolCard
from tests.conftest import ADMIN, AGENT, make_settings

CARDS = [
    ToolCard(name="get_weather", description="Current weather and forecast for a city."),
    ToolCard(name="convert_currency", description="Convert an amount between two currencies."),
    ToolCard(name="send_email", description="Send an email message to a recipient."),
]
STEPS = [
    "weather in Paris",
    "convert 20 euros to dollars",
    "email the invoice to anna",
    "forecast for Lyon",
    "send a message to the team",
]


class GatedEncoder:
    """A fake encoder that records each call's texts; the first call waits for `release`."""

    def __init__(self) -> None:
        self.inner = FakeEncoder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.calls: list[list[str]] = []
        self.entered, self.release = threading.Event(), threading.Event()
        self.fail_on: str | None = None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(10)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model failure")
        return self.inner.encode(texts)


@pytest.fixture(params=[0, 1], ids=["float32", "int8"])
def services(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Services, GatedEncoder]]:
    encoder = GatedEncoder()
    encoder.release.set()  # registering the cards passes the gate
    settings = make_settings(f"sqlite:///{tmp_path}/exec.db", cosine_int8_min_tools=request.param)
    built = build_services(settings, encoder)
    with unit_of_work(built.session_factory) as session:
        write_cards(session, built.encoder, CARDS)
    built.index.sync()
    encoder.calls.clear()
    encoder.entered.clear()
    encoder.release.clear()
    yield built, encoder
    built.close()


@contextmanager
def one_worker(built: Services) -> Iterator[RouteExecutor]:
    executor = RouteExecutor(built.routing, workers=1, max_batch=8)
    executor.start()
    try:
        yield executor
    finally:
        executor.stop()


def route_together(built: Services, encoder: GatedEncoder, steps: list[str]) -> list:
    """Route `steps` with one worker: step 0 alone, the rest queued behind it."""
    with one_worker(built) as executor:
        return asyncio.run(_route_all(executor, encoder, steps))


async def held(executor: RouteExecutor, encoder: GatedEncoder, step: str) -> asyncio.Task:
    """Route `step`, returning once the worker holds it inside the (gated) model call."""
    task = asyncio.create_task(executor.route(RouteRequest(query=step)))
    assert await asyncio.to_thread(encoder.entered.wait, 10)
    return task


def queue(executor: RouteExecutor, steps: list[str]) -> list[asyncio.Task]:
    return [asyncio.create_task(executor.route(RouteRequest(query=s))) for s in steps]


async def _route_all(executor: RouteExecutor, encoder: GatedEncoder, steps: list[str]) -> list:
    first = await held(executor, encoder, steps[0])
    rest = queue(executor, steps[1:])
    await asyncio.sleep(0.05)  # all queued behind it
    encoder.release.set()
    return await asyncio.gather(first, *rest, return_exceptions=True)


def test_steps_waiting_together_are_embedded_in_one_call(
    services: tuple[Services, GatedEncoder], monkeypatch: pytest.MonkeyPatch
) -> None:
    built, encoder = services
    products: list[int] = []  # query rows per int8 product
    original = Int8Matrix.product

    def counted(self: Int8Matrix, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        products.append(len(unit))
        return original(self, unit)

    monkeypatch.setattr(Int8Matrix, "product", counted)
    answers = route_together(built, encoder, STEPS)
    assert encoder.calls == [[STEPS[0]], STEPS[1:]]  # one call for the four that waited
    int8 = built.cosines.prepared(built.index.get("default").index.embeddings)  # type: ignore[union-attr]
    assert products == ([1, 4] if int8 else [])  # and one pass over the tool matrix
    encoder.calls.clear()
    for step, answer in zip(STEPS, answers, strict=True):  # the same as routing alone
        alone = route_step(RouteRequest(query=step), built.routing)
        assert [(c.name, c.score) for c in answer.candidates] == [
            (c.name, c.score) for c in alone.candidates
        ]
    assert len({a.route_id for a in answers}) == len(STEPS)


def test_a_model_failure_fails_its_batch_and_the_workers_go_on(
    services: tuple[Services, GatedEncoder],
) -> None:
    built, encoder = services
    encoder.fail_on = STEPS[2]
    with one_worker(built) as executor:
        answers = asyncio.run(_route_all(executor, encoder, STEPS))
        after = asyncio.run(executor.route(RouteRequest(query="weather in Rome")))
    assert answers[0].candidates  # its own batch
    assert all(isinstance(a, RuntimeError) for a in answers[1:])  # one model call, one fate
    assert after.candidates[0].name == "get_weather"


def test_a_ranking_failure_fails_only_its_own_step(
    services: tuple[Services, GatedEncoder], monkeypatch: pytest.MonkeyPatch
) -> None:
    built, encoder = services
    original = route_executor.route_step

    def rank(request: RouteRequest, deps: RouteDeps, **kwargs: object) -> object:
        if request.query == STEPS[3]:
            raise ValueError("bad step")
        return original(request, deps, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(route_executor, "route_step", rank)
    answers = route_together(built, encoder, STEPS)
    assert isinstance(answers[3], ValueError)
    assert all(a.candidates for i, a in enumerate(answers) if i != 3)


def test_stopping_answers_the_queued_steps_with_503_and_finishes_the_one_in_hand(
    services: tuple[Services, GatedEncoder],
) -> None:
    built, encoder = services
    executor = RouteExecutor(built.routing, workers=1, max_batch=8)
    executor.start()

    async def scenario() -> list:
        first = await held(executor, encoder, STEPS[0])
        queued = queue(executor, STEPS[1:3])
        await asyncio.sleep(0.05)
        stopper = threading.Thread(target=executor.stop)
        stopper.start()  # waits for the worker, which holds step 0
        await asyncio.sleep(0.05)
        encoder.release.set()
        answers = await asyncio.gather(first, *queued, return_exceptions=True)
        await asyncio.to_thread(stopper.join, 10)
        with pytest.raises(Unavailable):
            await executor.route(RouteRequest(query="too late"))
        return answers

    answers = asyncio.run(scenario())
    assert answers[0].candidates
    assert all(isinstance(a, Unavailable) for a in answers[1:])
    assert encoder.calls == [[STEPS[0]]]  # the queued steps never reached the model


def test_a_step_whose_client_left_while_it_waited_is_not_routed(
    services: tuple[Services, GatedEncoder],
) -> None:
    built, encoder = services

    async def scenario(executor: RouteExecutor) -> None:
        first = await held(executor, encoder, STEPS[0])
        left, stays = queue(executor, STEPS[1:3])
        await asyncio.sleep(0.05)
        left.cancel()  # what the server does when the client disconnects
        encoder.release.set()
        assert (await first).candidates and (await stays).candidates

    with one_worker(built) as executor:
        asyncio.run(scenario(executor))
    assert encoder.calls == [[STEPS[0]], [STEPS[2]]]
    built.events.flush()
    assert built.events.written == 2  # two routes recorded, not three


def test_past_the_queue_limit_a_step_is_refused_at_once_with_503_and_retry_after(
    tmp_path: Path,
) -> None:
    encoder = GatedEncoder()
    encoder.release.set()
    settings = make_settings(f"sqlite:///{tmp_path}/queue.db", route_workers=1, route_max_queue=1)
    app = create_app(settings, encoder=encoder)
    cards = [c.model_dump(exclude_none=True) for c in CARDS]
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.post("/v1/tools/bulk", json={"tools": cards}, headers=ADMIN).is_success
        encoder.calls.clear()
        encoder.entered.clear()
        encoder.release.clear()  # the next model call waits
        router = app.state.services.executor
        answers: dict[str, httpx.Response] = {}

        def post(step: str) -> None:
            answers[step] = client.post("/v1/route", json={"query": step}, headers=AGENT)

        held_step = threading.Thread(target=post, args=(STEPS[0],))
        held_step.start()
        assert encoder.entered.wait(10)  # step 0 is in the model, the queue is empty
        waiting_step = threading.Thread(target=post, args=(STEPS[1],))
        waiting_step.start()
        deadline = time.monotonic() + 10
        while router.waiting() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert router.waiting() == 1  # step 1 waits: the queue is full

        refused = client.post("/v1/route", json={"query": STEPS[2]}, headers=AGENT)
        metrics = client.get("/metrics").text
        encoder.release.set()
        held_step.join(10)
        waiting_step.join(10)

    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json() == {
        "error": {
            "code": "overloaded",
            "message": "the route queue is full (limit 1); retry shortly",
            "details": {"waiting": 1, "limit": 1},
        }
    }
    assert "toolreach_routes_refused_total 1.0" in metrics
    assert "toolreach_route_queue 1.0" in metrics
    assert [answers[s].status_code for s in STEPS[:2]] == [200, 200]  # nothing lost
    assert encoder.calls == [[STEPS[0]], [STEPS[1]]]  # the refused step never reached the model


def test_the_steps_of_one_batch_share_one_model_call_past_max_batch(
    services: tuple[Services, GatedEncoder],
) -> None:
    built, encoder = services
    encoder.release.set()
    executor = RouteExecutor(built.routing, workers=1, max_batch=2)
    executor.start()
    try:
        answers = asyncio.run(executor.route_many([RouteRequest(query=s) for s in STEPS]))
    finally:
        executor.stop()
    assert encoder.calls == [STEPS]  # one call for the five, though a batch is 2
    assert len({a.route_id for a in answers}) == len(STEPS)
    for step, answer in zip(STEPS, answers, strict=True):  # each as if routed alone
        alone = route_step(RouteRequest(query=step), built.routing)
        assert [c.name for c in answer.candidates] == [c.name for c in alone.candidates]
    built.events.flush()
    assert built.events.written == 2 * len(STEPS)  # each recorded on its own (and alone)


def test_a_batch_the_queue_cannot_take_whole_is_refused_whole(
    services: tuple[Services, GatedEncoder],
) -> None:
    built, encoder = services
    executor = RouteExecutor(built.routing, workers=1, max_batch=8, max_queue=3)
    executor.start()

    async def scenario() -> None:
        first = await held(executor, encoder, STEPS[0])
        with pytest.raises(Overloaded):
            await executor.route_many([RouteRequest(query=s) for s in STEPS[1:]])
        assert executor.waiting() == 0  # none of the four was queued
        three = asyncio.create_task(
            executor.route_many([RouteRequest(query=s) for s in STEPS[1:4]])
        )
        await asyncio.sleep(0.05)
        encoder.release.set()
        assert (await first).candidates and len(await three) == 3

    try:
        asyncio.run(scenario())
    finally:
        executor.stop()
    assert encoder.calls == [[STEPS[0]], STEPS[1:4]]


def test_two_workers_rank_one_batch_at_a_time_while_the_other_embeds(
    services: tuple[Services, GatedEncoder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ranking holds the interpreter, so two batches ranked at once only trade it back
    and forth: one ranks at a time, while another batch's model call still overlaps it."""
    built, encoder = services
    encoder.release.set()
    original, guard = route_executor.route_step, threading.Lock()
    ranking, most, overlapped = [0], [0], [0]

    def rank(request: RouteRequest, deps: RouteDeps, **kwargs: object) -> object:
        with guard:
            ranking[0] += 1
            most[0] = max(most[0], ranking[0])
        time.sleep(0.05)
        try:
            return original(request, deps, **kwargs)  # type: ignore[arg-type]
        finally:
            with guard:
                ranking[0] -= 1

    inner = encoder.encode

    def encode(texts: Sequence[str]) -> np.ndarray:
        with guard:
            overlapped[0] += ranking[0] > 0
        return inner(texts)

    monkeypatch.setattr(route_executor, "route_step", rank)
    monkeypatch.setattr(encoder, "encode", encode)
    steps = [f"{s} number {n}" for n in range(2) for s in STEPS]

    async def spaced(executor: RouteExecutor) -> list:
        tasks = []
        for step in steps:
            tasks.append(asyncio.create_task(executor.route(RouteRequest(query=step))))
            await asyncio.sleep(0.02)
        return await asyncio.gather(*tasks)

    executor = RouteExecutor(built.routing, workers=2, max_batch=1)
    executor.start()
    try:
        answers = asyncio.run(spaced(executor))
    finally:
        executor.stop()
    assert all(a.candidates for a in answers)
    assert most[0] == 1  # never two rankings at once
    assert overlapped[0] > 0  # a model call ran while another batch was ranked
