"""Look-alike load (issue 21 part 4): route latency at ~6,300 tools, idle and while four
clients loop ``GET /v1/lookalikes?threshold=0&limit=500``, against real servers, this code
and (``--baseline DIR``, e.g. /work/main) another checkout, side by side in one run.

The registry: Seal-Tools' 4,076 tools, MetaTool's 199, and look-alike variants of Seal-Tools
tools (same parameters, the description reworded) up to ``--tools``, imported once with the
real default encoder into a fresh Postgres database that both servers then serve (one at a
time). For each server:

- ``idle``: routes from one keep-alive client, one at a time (bench.perf.load_client's
  requests), ``--rounds`` of them;
- ``fixed``: the same while four clients (one process, raw sockets) loop the look-alike
  request with ``threshold=0&limit=500``;
- ``varied``: the same with a threshold that changes on every request (0, 0.0001, ...): the
  baseline memoised each threshold's answer on its snapshot, which this defeats.

Per series: route p50 and p99, look-alike requests answered per second with their p50, and
their statuses. For this code, also the seconds from ready to the first complete look-alikes.

    .venv/bin/python -m bench.perf.lookalike_load [--tools 6300] [--rounds 400] [--baseline DIR]
        [--json OUT]
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from app.tools.catalog import parse_batch
from bench.common import ROOT, add_baseline, add_json, parser, percentile, write_report
from bench.servers import Server, exchange, python_path, route_times, scratch_database

DATA = Path("/work/shared/data")
VIEWER_KEY = "bench-dashboard-key-0123456789"
ADMIN_KEY = "bench-admin-key-0123456789"
LOOPERS = 4


def registry(size: int) -> list[dict[str, Any]]:
    """Seal-Tools and MetaTool, then reworded copies of Seal-Tools tools, ``size`` valid
    cards in all (the few the registry refuses are left out)."""
    seal = [json.loads(line) for line in (DATA / "seal-tools/tools.jsonl").open()]
    meta = [json.loads(line) for line in (DATA / "metatool/tools.jsonl").open()]
    tools: dict[str, dict[str, Any]] = {}
    for tool in [*seal, *meta]:
        tools.setdefault(tool["name"], {k: v for k, v in tool.items() if v is not None})
    for tool in seal:
        copy = dict(tools[tool["name"]])
        copy["name"] = f"{tool['name']}_v2"
        copy["description"] = f"{tool['description']} Newer version of {tool['name']}."
        tools[copy["name"]] = copy
    items = list(tools.values())
    refused = {reject["index"] for reject in parse_batch(items, "default").rejects}
    valid = [item for index, item in enumerate(items) if index not in refused]
    if len(valid) < size:
        raise SystemExit(f"only {len(valid)} valid tools; ask for fewer")
    return valid[:size]


def toolreach(code: Path, url: str, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": python_path(code), "TOOLREACH_DATABASE_URL": url}
    subprocess.run(
        [sys.executable, "-m", "app.cli", *args], cwd=tempfile.gettempdir(), env=env, check=True
    )


@contextmanager
def database(size: int) -> Iterator[str]:
    with scratch_database("toolreach_bench_lookalike") as url:
        toolreach(ROOT, url, "migrate")
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as out:
            out.writelines(json.dumps(tool) + "\n" for tool in registry(size))
        started = time.perf_counter()
        toolreach(ROOT, url, "import", out.name, "--namespace", "default")
        print(f"imported {size} tools in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        yield url


def server(code: Path, url: str) -> Server:
    env = {
        "TOOLREACH_DATABASE_URL": url,
        "TOOLREACH_LOG_LEVEL": "warning",
        "TOOLREACH_ADMIN_KEYS": ADMIN_KEY,
        "TOOLREACH_DASHBOARD_KEYS": VIEWER_KEY,
    }
    return Server(code, env)


def lookalike_request(threshold: float) -> bytes:
    path = f"/v1/lookalikes?threshold={threshold:.4f}&limit=500"
    head = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {VIEWER_KEY}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode()


def loop_lookalikes(port: int, varied: bool, stop: Any, results: Any) -> None:
    """LOOPERS connections, each looping the look-alike request until ``stop`` is set."""

    async def one(n: int) -> list[tuple[int, float]]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        done, i = [], n
        while not stop.is_set():
            threshold = (i % 5000) / 10_000 if varied else 0.0
            started = time.perf_counter()
            status, _ = await exchange(reader, writer, lookalike_request(threshold))
            done.append((status, time.perf_counter() - started))
            i += LOOPERS
        writer.close()
        return done

    async def main() -> None:
        for found in await asyncio.gather(*(one(n) for n in range(LOOPERS))):
            results.extend(found)

    asyncio.run(main())


def route_latency(port: int, rounds: int) -> dict[str, float]:
    """One client, one route at a time, on a keep-alive socket (after 20 to warm up)."""
    times = route_times(port, rounds, warm_up=20)
    return {
        "route_p50_ms": round(percentile(times, 50) * 1000, 1),
        "route_p99_ms": round(percentile(times, 99) * 1000, 1),
    }


def under_load(port: int, rounds: int, varied: bool) -> dict[str, Any]:
    with multiprocessing.Manager() as manager:
        stop, results = manager.Event(), manager.list()
        looper = multiprocessing.Process(target=loop_lookalikes, args=(port, varied, stop, results))
        started = time.perf_counter()
        looper.start()
        time.sleep(2)  # the loopers at work before the routes are timed
        result: dict[str, Any] = route_latency(port, rounds)
        stop.set()
        looper.join(timeout=600)
        seconds = time.perf_counter() - started
        answered = list(results)
    statuses: dict[str, int] = {}
    for status, _ in answered:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    result["lookalikes_per_s"] = round(len(answered) / seconds, 1)
    result["lookalike_p50_ms"] = round(percentile([t for _, t in answered], 50) * 1000, 1)
    result["lookalike_statuses"] = statuses
    return result


def first_complete(port: int) -> float:
    """Seconds until GET /v1/lookalikes says complete (this code's background computation)."""
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {VIEWER_KEY}"}
    while True:
        answer = httpx.get(
            f"http://127.0.0.1:{port}/v1/lookalikes?limit=1", headers=headers, timeout=60
        ).json()
        if answer.get("complete", True):
            return round(time.perf_counter() - started, 2)
        time.sleep(0.1)


def bench(code: Path, url: str, rounds: int) -> dict[str, Any]:
    print(f"serving {code} ...", file=sys.stderr, flush=True)
    with server(code, url) as served:
        port = served.port
        result: dict[str, Any] = {"ready_to_complete_s": first_complete(port)}
        result["idle"] = route_latency(port, rounds)
        result["fixed"] = under_load(port, rounds, varied=False)
        result["varied"] = under_load(port, rounds, varied=True)
        result["idle_after"] = route_latency(port, rounds)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--tools", type=int, default=6300)
    cli.add_argument("--rounds", type=int, default=400)
    add_baseline(cli)
    add_json(cli)
    args = cli.parse_args(argv)
    results: dict[str, Any] = {"tools": args.tools}
    with database(args.tools) as url:
        if args.baseline is not None:
            results["baseline"] = bench(args.baseline.resolve(), url, args.rounds)
        results["this"] = bench(ROOT, url, args.rounds)
    write_report(results, args.json)


if __name__ == "__main__":
    main()
