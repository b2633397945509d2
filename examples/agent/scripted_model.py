"""A scripted stand-in for the chat model, for the tests and for trying the agent with no
LLM: it plans from a list of turns and answers each step's tool choice from a queue of
calls for that step (mistakes included, to show how the loop corrects them). Its final
answer is written from what the tools really answered (``report``): it never reports a
result the agent did not get."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]
Call = tuple[str, dict[str, Any]]
Observed = list[dict[str, Any]]  # the observations the planner sees: step, tool, ok, observed
Turn = list[str] | str | Callable[[Observed], str]  # steps, an answer, or one written from them

TASK = (
    "A customer asks: where is my order o100999? Also, what is the weather right now in "
    "Paris, FR and in Atlantis, and how much is 250 USD in EUR?"
)
TRACK, PARIS, ATLANTIS, CONVERT = (
    "Track the parcel of order o100999",
    "Current weather in Paris, FR",
    "Current weather in Atlantis",
    "Convert 250 USD to EUR",
)
DETAILS = "Get the details and status of order o100999"


class ScriptedModel:
    """``turns``: each planning answer, a list of steps or the final answer (a string).
    ``calls``: per step text, the calls the model makes, in order (a repair takes the next).
    ``prompts`` keeps what each planning call saw; ``offered`` the tools each step saw."""

    def __init__(self, turns: list[Turn], calls: dict[str, list[Call]]) -> None:
        self.turns, self.calls = list(turns), {k: list(v) for k, v in calls.items()}
        self.prompts: list[str] = []
        self.offered: dict[str, list[list[str]]] = {}

    async def complete(self, messages: list[Message], tools: list[Message] | None) -> Message:
        if tools is None:
            prompt = messages[-1]["content"]
            self.prompts.append(prompt)
            turn = self.turns.pop(0)
            if callable(turn):
                turn = turn(json.loads(prompt.split("Observations so far: ", 1)[1]))
            plan = {"answer": turn} if isinstance(turn, str) else {"steps": turn}
            return {"role": "assistant", "content": json.dumps(plan)}
        step = messages[1]["content"]
        self.offered.setdefault(step, []).append([t["function"]["name"] for t in tools])
        if not self.calls.get(step):
            return {"role": "assistant", "content": "None of these tools fits."}
        name, arguments = self.calls[step].pop(0)
        call_id = f"call_{len(self.offered[step])}_{abs(hash(step)) % 10_000}"
        function = {"name": name, "arguments": json.dumps(arguments)}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        }


def said(observation: dict[str, Any]) -> str:
    """One observation in words: what the tool answered, or that the step was not done."""
    step, got = observation["step"], observation["observed"]
    if not observation["ok"]:
        why = got.get("message", got) if isinstance(got, dict) else got
        return f"{step}: not done ({why})."
    tool, got = observation["tool"], got if isinstance(got, dict) else {}
    if tool == "get_current_weather" and "temperature" in got:
        return f"{got['location']}: {got['temperature']:g} °C, {got['conditions']}."
    if tool == "convert_currency" and "converted_amount" in got:
        return f"{step}: {got['converted_amount']:.2f} {got['to_currency']}."
    if tool in ("get_order_details", "track_shipment") and "order_id" in got:
        facts = ", ".join(f"{k} {v}" for k, v in got.items() if k != "order_id")
        return f"Order {got['order_id']}: {facts}."
    return f"{step}: {json.dumps(observation['observed'], ensure_ascii=False)}."


def report(observations: Observed) -> str:
    """The final answer: each step as its tool answered it, and nothing else."""
    return " ".join(said(o) for o in observations) or "I could not do any of it."


def demo_model() -> ScriptedModel:
    """The demo run: a wrong tool name, bad arguments, a failing tool whose card suggests
    the next step, and parallel steps of which two fail; the answer says what was got."""
    return ScriptedModel(
        turns=[[TRACK, PARIS, ATLANTIS, CONVERT], [DETAILS], report],
        calls={
            TRACK: [
                ("trackShipment", {"order_id": "o100999"}),
                ("track_shipment", {"order_id": "o100999"}),
            ],
            PARIS: [("get_current_weather", {"location": "Paris, FR"})],
            ATLANTIS: [("get_current_weather", {"location": "Atlantis"})],
            CONVERT: [
                ("convert_currency", {"amount": "250", "from": "USD", "to": "EUR"}),
                ("convert_currency", {"amount": 250, "from_currency": "USD", "to_currency": "EUR"}),
            ],
            DETAILS: [("get_order_details", {"order_id": "o100999"})],
        },
    )
