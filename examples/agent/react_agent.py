"""A ReAct agent on ToolReach, end to end: plan the next steps; route each one; let the
model choose among the routed tools only; validate the call (did-you-mean fixes a wrong
name, the validation error fixes bad arguments); execute it; observe; report; repeat until
done or out of turns. Independent steps run at once, and one failing loses no other's result.

    python react_agent.py "what is 250 USD in EUR?"   # a chat endpoint, by environment
    python react_agent.py --scripted                   # the scripted demo model (no LLM)
    python react_agent.py --scripted --gateway         # the tools run at demo_server.py,
                                                       # called through ToolReach's gateway

Environment: TOOLREACH_URL, TOOLREACH_API_KEY, TOOLREACH_NAMESPACE; OPENAI_BASE_URL,
OPENAI_API_KEY, TOOLREACH_AGENT_MODEL (any OpenAI-compatible chat endpoint);
TOOLREACH_AGENT_GATEWAY=1 as --gateway, which also needs TOOLREACH_ADMIN_KEY (to register
the demo server as a source: gateway_demo.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from demo_tools import REGISTRY, ToolFailure
from toolreach_client import AsyncStep, AsyncToolReach, ToolReachError

PLAN = (
    "You solve the user's task with tools you do not see. Reply with JSON only: "
    '{"steps": ["..."]} for the next steps, each one tool call described in words with the '
    'values it needs (independent steps run at once), or {"answer": "..."} when done. '
    "When a step failed, its error's suggestion says what to do next."
)
ACT = "Call exactly one of the given tools to do this step."
Message = dict[str, Any]
Outcome = tuple[bool, Any]  # (ok, the result or the error {code, message, suggestion})


class ChatModel(Protocol):
    async def complete(self, messages: list[Message], tools: list[Message] | None) -> Message:
        """The assistant's message; with ``tools``, it should call one of them."""
        ...


class OpenAIChat:
    """Any OpenAI-compatible Chat Completions endpoint."""

    def __init__(self, base_url: str, api_key: str, model: str) -> None:
        headers = {"Authorization": f"Bearer {api_key}"}
        self.http = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=120)
        self.model = model

    async def complete(self, messages: list[Message], tools: list[Message] | None) -> Message:
        body: Message = {"model": self.model, "messages": messages}
        if tools:
            body |= {"tools": tools, "tool_choice": "required"}
        response = await self.http.post("/chat/completions", json=body)
        response.raise_for_status()
        message: Message = response.json()["choices"][0]["message"]
        return message


@dataclass
class Observation:
    step: str
    tool: str | None
    ok: bool
    content: Any
    trace: list[str] = field(default_factory=list)

    def for_planner(self) -> Message:
        return {"step": self.step, "tool": self.tool, "ok": self.ok, "observed": self.content}


Execute = Callable[[AsyncStep, str, dict[str, Any]], Awaitable[Outcome]]


def local_tools(client: AsyncToolReach) -> Execute:
    """Run demo_tools in a thread; a failure comes back with its card's suggestion."""

    async def execute(step: AsyncStep, name: str, arguments: dict[str, Any]) -> Outcome:
        tool = step.tool_name(name)
        try:
            return True, await asyncio.to_thread(REGISTRY[tool], **arguments)
        except ToolFailure as failure:
            card = await client.tools.get(tool, namespace=step.namespace)
            error = {"code": failure.code, "message": str(failure)}
            return False, error | {"suggestion": card.suggestion_for(failure.code)}

    return execute


async def through_gateway(step: AsyncStep, name: str, arguments: dict[str, Any]) -> Outcome:
    """Run the tool by ToolReach's gateway (the call is also the step's report); an MCP
    tool's structured result, when it gives one, is what the agent observes."""
    result = await step.call(name, arguments)
    if result.ok:
        answer = result.result
        structured = answer.get("structuredContent") if isinstance(answer, dict) else None
        return True, structured if structured is not None else answer
    error = result.error.model_dump(exclude_none=True) if result.error else {}
    error.pop("details", None)  # the raw upstream answer: the message already says it
    return False, error


class Agent:
    def __init__(
        self,
        client: AsyncToolReach,
        model: ChatModel,
        execute: Execute | None = None,
        *,
        k: int = 3,
        max_turns: int = 6,
        max_repairs: int = 2,
        log: Callable[[str], None] = print,
    ) -> None:
        self.client, self.model, self.k, self.log = client, model, k, log
        self.execute = execute or local_tools(client)
        self.max_turns, self.max_repairs = max_turns, max_repairs

    async def run(self, task: str) -> str:
        observations: list[Observation] = []
        for turn in range(1, self.max_turns + 1):
            plan = await self.plan(task, observations)
            if "answer" in plan:
                self.log(f"answer: {plan['answer']}")
                return str(plan["answer"])
            steps = [str(s) for s in plan.get("steps", [])]
            self.log(f"turn {turn}: {len(steps)} step(s)")
            done = await asyncio.gather(*(self.do(s) for s in steps), return_exceptions=True)
            for text, result in zip(steps, done, strict=True):
                if isinstance(result, BaseException):  # this step only: the others stand
                    result = Observation(text, None, False, f"{type(result).__name__}: {result}")
                observations.append(result)
                self.log("\n".join([f"  step: {text}", *result.trace]))
        self.log("stopped: out of turns")
        return "I could not finish the task within the step limit."

    async def plan(self, task: str, observations: list[Observation]) -> Message:
        seen = json.dumps([o.for_planner() for o in observations], ensure_ascii=False)
        messages = [
            {"role": "system", "content": PLAN},
            {"role": "user", "content": f"Task: {task}\nObservations so far: {seen}"},
        ]
        reply = await self.model.complete(messages, None)
        text = reply.get("content") or ""
        try:  # JSON, perhaps inside prose or a code fence
            plan: Message = json.loads(text[text.find("{") : text.rfind("}") + 1])
        except ValueError:
            plan = {}
        return plan if plan.get("steps") or "answer" in plan else {"answer": text}

    async def do(self, text: str) -> Observation:
        step = await self.client.route(text, k=self.k, format="openai")
        trace = [f"    routed: {', '.join(step.names)}"]
        call = await self.choose(text, step, trace)
        if call is None:
            await step.none_fit()
            return Observation(text, None, False, "no valid call of the routed tools", trace)
        name, arguments = call
        ok, content = await self.execute(step, name, arguments)
        outcome = "success" if ok else "error"
        code = None if ok or not isinstance(content, dict) else content.get("code")
        await step.report(name, outcome, code)
        shown = json.dumps(content, ensure_ascii=False)
        trace.append(f"    {'ok' if ok else 'failed'}: {shown}; reported {outcome}")
        return Observation(text, step.tool_name(name), ok, content, trace)

    async def choose(
        self, text: str, step: AsyncStep, trace: list[str]
    ) -> tuple[str, dict[str, Any]] | None:
        """The model's call among the routed tools, validated; its mistakes go back to it."""
        messages: list[Message] = [
            {"role": "system", "content": ACT},
            {"role": "user", "content": text},
        ]
        for _ in range(self.max_repairs + 1):
            reply = await self.model.complete(messages, step.tools)
            calls = reply.get("tool_calls") or []
            if not calls:
                return None
            call = calls[0]
            name = call["function"]["name"]
            arguments = json.loads(call["function"].get("arguments") or "{}")
            shown = f"{name}({json.dumps(arguments, ensure_ascii=False)})"
            check = await step.validate(name, arguments)
            if check.valid and step.offers(name):
                trace.append(f"    call: {shown}")
                return name, arguments
            problem = check.explain() if not check.valid else "not a tool for this step"
            if not step.offers(name):
                problem += f"; the tools for this step: {', '.join(step.names)}"
            trace.append(f"    refused: {shown}: {problem}")
            answer = {"role": "tool", "tool_call_id": call["id"], "content": problem}
            messages += [{"role": "assistant", "content": None, "tool_calls": [call]}, answer]
        return None


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="react_agent.py",
        description="A ReAct agent on ToolReach (examples/agent/README.md).",
        epilog="Environment: TOOLREACH_URL, TOOLREACH_API_KEY, TOOLREACH_NAMESPACE; "
        "OPENAI_API_KEY, OPENAI_BASE_URL, TOOLREACH_AGENT_MODEL; TOOLREACH_AGENT_GATEWAY=1 "
        "(as --gateway) and TOOLREACH_ADMIN_KEY.",
    )
    parser.add_argument("task", nargs="*", help="the task, in words (asked for if absent)")
    parser.add_argument("--scripted", action="store_true", help="the scripted model: no LLM")
    parser.add_argument(
        "--gateway",
        action="store_true",
        default=os.environ.get("TOOLREACH_AGENT_GATEWAY") == "1",
        help="run the tools at demo_server.py, through ToolReach's gateway",
    )
    return parser.parse_args(argv)


def chat_model(env: Mapping[str, str]) -> OpenAIChat:
    """The chat endpoint of the environment; SystemExit with what to set if there is none."""
    key = env.get("OPENAI_API_KEY")
    if not key:
        raise SystemExit(
            "react_agent.py: set OPENAI_API_KEY (and OPENAI_BASE_URL for another "
            "OpenAI-compatible endpoint), or run with --scripted, which needs no LLM"
        )
    base = env.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    return OpenAIChat(base, key, env.get("TOOLREACH_AGENT_MODEL", "gpt-4.1"))


async def run(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    model: ChatModel
    if args.scripted:
        from scripted_model import TASK, demo_model

        task, model = TASK, demo_model()
    else:
        model = chat_model(env)
        task = " ".join(args.task) or input("task: ")
    print(f"task: {task}")
    if args.gateway:
        from gateway_demo import demo_source

        async with demo_source(env) as namespace, AsyncToolReach(namespace=namespace) as client:
            return await Agent(client, model, through_gateway).run(task)
    async with AsyncToolReach(namespace=env.get("TOOLREACH_NAMESPACE", "default")) as client:
        return await Agent(client, model).run(task)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        asyncio.run(run(args, os.environ))
    except (ToolReachError, httpx.HTTPError) as exc:  # no service there, a refused key, ...
        print(f"react_agent.py: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
