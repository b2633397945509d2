"""`toolreach simulate`: an agent replaying a labelled dataset against a running service.

Over HTTP only, like a real agent: it registers the dataset's tools in a namespace
(``POST /v1/tools/bulk``, admin key), then for each query routes it (``POST /v1/route``)
and reports the labelled tool as chosen (``POST /v1/feedback``), with a configurable share
of failed calls, so the statistics and the dashboard fill with realistic data.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.cli.evaluate import Query, load_dataset, loaded_tools, renamed_tools, renames_line
from app.tools.catalog import parse_batch

BULK_CHUNK = 200  # tools per bulk request: well under the default body limit
ERROR_CODE = "SIMULATED_FAILURE"


class SimulationError(RuntimeError):
    """The service refused the simulation (a wrong key, a wrong URL): stop with this message."""


@dataclass(frozen=True)
class SimulateOptions:
    data: Path
    namespace: str = "simulated"
    failure_rate: float = 0.1
    limit: int | None = None
    k: int = 5
    seed: int = 0
    admin_key: str | None = None
    agent_key: str | None = None


@dataclass
class SimulationSummary:
    tools: int = 0
    rejected_tools: list[str] = field(default_factory=list)
    renamed_tools: dict[str, str] = field(default_factory=dict)  # in the dataset → registered
    registered: set[str] = field(default_factory=set)
    routes: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    failed_requests: int = 0

    def lines(self) -> list[str]:
        """The summary, in the terms of /v1/stats (hit@k includes hit@1)."""
        feedback = sum(self.verdicts.values())
        counts = {
            "hit@1": self.verdicts["hit_at_1"],
            "hit@k": self.verdicts["hit_at_1"] + self.verdicts["hit_at_k"],
            "miss": self.verdicts["miss"],
            "none fit": self.verdicts["none_fit"],
        }
        shares = {k: f" ({n / feedback:.1%})" if feedback else "" for k, n in counts.items()}
        renamed = [f"  {renames_line(self.renamed_tools)}"] if self.renamed_tools else []
        return [
            f"registered {self.tools} tools ({len(self.rejected_tools)} rejected, "
            f"{len(self.renamed_tools)} renamed)",
            *renamed,
            f"routed {self.routes} queries, reported {feedback} choices",
            "  " + ", ".join(f"{k} {n}{shares[k]}" for k, n in counts.items()),
            "  outcomes: " + ", ".join(f"{o} {n}" for o, n in sorted(self.outcomes.items())),
            f"  failed requests: {self.failed_requests}",
        ]


def _headers(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def _check(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code in (401, 403, 404, 405):
        raise SimulationError(f"{what}: HTTP {response.status_code}: {response.text[:300]}")
    if response.is_error:
        raise httpx.HTTPStatusError(what, request=response.request, response=response)
    body: dict[str, Any] = response.json()
    return body


def register(
    client: httpx.Client, tools: Sequence[dict[str, Any]], options: SimulateOptions
) -> SimulationSummary:
    """Register every valid tool of the dataset in the namespace, in chunks."""
    batch = parse_batch(tools, options.namespace)
    registered = loaded_tools(batch, options.data / "tools.jsonl")
    rejected = {r["index"] for r in batch.rejects}  # by position: a name's first copy stays
    valid = [t for i, t in enumerate(tools) if i not in rejected]
    for start in range(0, len(valid), BULK_CHUNK):
        chunk = valid[start : start + BULK_CHUNK]
        response = client.post(
            "/v1/tools/bulk",
            json={"tools": chunk, "namespace": options.namespace},
            headers=_headers(options.admin_key),
        )
        if response.is_error:
            status = response.status_code
            raise SimulationError(f"registering tools: HTTP {status}: {response.text[:300]}")
    names = sorted(str(r["name"]) for r in batch.rejects)
    return SimulationSummary(
        tools=len(valid),
        rejected_tools=names,
        renamed_tools=renamed_tools(options.data),
        registered=registered,
    )


def pick_choice(relevant: Iterable[str], candidates: Sequence[str]) -> str:
    """The labelled tool the agent calls: one the route offered if any, else the first label."""
    labels = sorted(relevant)
    offered = [name for name in candidates if name in labels]
    return offered[0] if offered else labels[0]


def replay_one(
    client: httpx.Client, query: Query, options: SimulateOptions, rng: random.Random
) -> tuple[str, str]:
    """Route one query and report its labelled tool; returns (verdict, outcome)."""
    headers = _headers(options.agent_key)
    body = {"query": query.text, "namespace": options.namespace, "k": options.k}
    routed = _check(client.post("/v1/route", json=body, headers=headers), "routing")
    names = [c["name"] for c in routed["candidates"]]
    failed = rng.random() < options.failure_rate
    report = {
        "route_id": routed["route_id"],
        "chosen": pick_choice(query.relevant, names),
        "outcome": "error" if failed else "success",
        "error_code": ERROR_CODE if failed else None,
    }
    recorded = _check(client.post("/v1/feedback", json=report, headers=headers), "feedback")
    return str(recorded["verdict"]), str(recorded["outcome"])


def simulate(
    client: httpx.Client,
    options: SimulateOptions,
    progress: Callable[[Iterable[Query]], Iterable[Query]] = lambda q: q,
) -> SimulationSummary:
    """Register the dataset's tools, then replay its queries as an agent would."""
    tools, queries = load_dataset(options.data, options.limit)
    summary = register(client, tools, options)
    known = summary.registered
    rng = random.Random(options.seed)
    playable = [Query(q.text, q.relevant & known) for q in queries if q.relevant & known]
    for query in progress(playable):
        try:
            verdict, outcome = replay_one(client, query, options, rng)
        except (httpx.HTTPStatusError, httpx.TransportError):
            summary.failed_requests += 1
            continue
        summary.routes += 1
        summary.verdicts[verdict] += 1
        summary.outcomes[outcome] += 1
    return summary
