"""The route-answer regression: every query of a labelled dataset, routed through the public
API of an in-process service, written as one JSON line per query (candidates, scores, stages,
missing parameters).

Run it before and after a change that must not change an answer, then compare:

    python -m bench.quality.route_answers --data DIR --out before.jsonl
    ... change ...
    python -m bench.quality.route_answers --data DIR --out after.jsonl --compare before.jsonl

It speaks only to ``app.main.create_app`` and HTTP (and, once the tools are written, waits
for the cards' examples to be built), so it survives any reorganisation of the service's
inside. The default encoder is the service's default (the real model).

An answer that read its step as several parts also keeps its ``parts``; ``--one-part``
compares only the steps the run read as one part (a step read as several is answered by
another design, a covering set: docs/ROUTING.md, "Steps of several parts").
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from bench.common import add_data, dataset, parser, read_jsonl

KEY = "route-answers-admin-key-0123456789"
HEADERS = {"Authorization": f"Bearer {KEY}"}
NAMESPACE = "answers"
BULK = 500  # tools per bulk request (each well under the body limit)
_INVALID = re.compile(r"[^A-Za-z0-9_.:-]")


def register(client: TestClient, tools: list[dict[str, Any]]) -> None:
    for start in range(0, len(tools), BULK):
        chunk = [
            {**tool, "name": _INVALID.sub("_", tool["name"])[:128]}
            for tool in tools[start : start + BULK]
        ]
        body = {"tools": chunk, "namespace": NAMESPACE}
        response = client.post("/v1/tools/bulk", json=body, headers=HEADERS)
        if response.status_code != 200:
            sys.exit(f"bulk import failed: {response.status_code} {response.text[:500]}")


def settle(client: TestClient) -> None:
    """Wait for what a write builds in the background before routing: the cards' examples
    as vectors (app/tools/examples.py). Routed before they are, a set whose cards have
    examples got answers with or without the examples' votes, by timing."""
    examples = client.app.state.services.examples  # type: ignore[attr-defined]
    if examples is not None:
        examples.refresh()


def answer(client: TestClient, query: str, k: int) -> dict[str, Any]:
    body = {"query": query, "namespace": NAMESPACE, "k": k, "format": "raw"}
    response = client.post("/v1/route", json=body, headers=HEADERS)
    if response.status_code != 200:
        return {"status": response.status_code, "error": response.json().get("error", {})}
    body = response.json()
    answered: dict[str, Any] = {
        "candidates": [
            {key: c[key] for key in ("name", "score", "stages", "missing_required")}
            for c in body["candidates"]
        ]
    }
    if body.get("parts"):
        answered["parts"] = body["parts"]
    return answered


def run(data: Path, k: int, limit: int | None) -> list[dict[str, Any]]:
    tools, queries = dataset(data, limit)
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(
            _env_file=None,
            database_url=f"sqlite:///{scratch}/answers.db",
            admin_keys=(KEY,),
            index_poll_seconds=3600,
        )
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            register(client, tools)
            settle(client)
            rows = []
            for number, item in enumerate(queries):
                rows.append(
                    {"n": number, "query": item["query"], **answer(client, item["query"], k)}
                )
                if number % 500 == 0:
                    print(f"{number}/{len(queries)} queries", file=sys.stderr, flush=True)
    return rows


def compare(rows: list[dict[str, Any]], before: Path, one_part: bool = False) -> int:
    """How many answers differ from the file's (``one_part``: of the steps this run read as
    one part); each difference is printed."""
    old = read_jsonl(before)
    if len(old) != len(rows):
        print(f"{before}: {len(old)} answers, now {len(rows)}")
        return max(len(old), len(rows))
    differ = 0
    pairs = [(was, now) for was, now in zip(old, rows, strict=True)]
    if one_part:
        pairs = [(was, now) for was, now in pairs if "parts" not in now]
        print(f"{len(pairs)} of {len(rows)} steps read as one part")
    for was, now in pairs:
        if was != now:
            differ += 1
            if differ <= 10:
                print(f"query {now['n']} differs:\n  was {was}\n  now {now}")
    return differ


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--out", type=Path, required=True, help="where to write the answers")
    cli.add_argument("--compare", type=Path, help="answers of an earlier run to compare with")
    cli.add_argument("--k", type=int, default=10)
    cli.add_argument("--limit", type=int, help="only the first N queries")
    cli.add_argument(
        "--one-part", action="store_true", help="compare only the steps read as one part"
    )
    args = cli.parse_args(argv)
    rows = run(args.data, args.k, args.limit)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} answers written to {args.out}")
    if args.compare:
        differ = compare(rows, args.compare, args.one_part)
        print(f"{differ} of {len(rows)} answers differ from {args.compare}")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
