"""The rate limits' effect and cost, side by side: limiter on (the defaults) against off (all
three limits 0), alternating, on a real `toolreach serve` with the demo catalog on SQLite.

Per round and mode: the route latency of one keep-alive client with an agent key (p50, p99),
throughput of `--clients` keep-alive clients (bench.perf.load_client), then key guessing: 8
connections sending `GET /v1/tools` with a new made-up bearer key each time, for
`--guess-seconds`; a 401 is a guess the service checked, a 429 one it refused unread.

    python -m bench.perf.rate_limits [--rounds 3] [--seconds 15] [--guess-seconds 10]
    python -m bench.perf.rate_limits --gate-only

Prints one JSON object: every run, and per mode the median of each figure. On a busy
machine a route's own spread (milliseconds) hides the limiter's cost, so the script first
times the limiter's gate alone, in-process: the rate-limit middleware (app/api/middleware.py)
around an application that does nothing, against that application alone, per request, with
the default limits and with all three off (`--gate-only`: that part only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import ROOT, parser, percentile
from bench.servers import Server, exchange, load_clients, route_times

AGENT_KEY = "bench-agent-key-" + secrets.token_hex(8)
OFF = {
    "TOOLREACH_RATE_LIMIT_PER_CLIENT": "0",
    "TOOLREACH_RATE_LIMIT_PER_KEY": "0",
    "TOOLREACH_AUTH_FAILURES_PER_CLIENT": "0",
}


def start_server(workdir: Path, limits: dict[str, str]) -> Server:
    """This checkout's server on the demo catalog, none of this environment's settings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TOOLREACH_")}
    env = {
        "TOOLREACH_DATABASE_URL": f"sqlite:///{workdir / 'bench.db'}",
        "TOOLREACH_AGENT_KEYS": AGENT_KEY,
        "TOOLREACH_LOAD_DEMO": "true",
        "TOOLREACH_LOG_LEVEL": "warning",
        "HF_HUB_OFFLINE": "1",
        **limits,
    }
    server = Server(ROOT, env, base=base, cwd=workdir, wait=False)
    server.wait_ready(600)
    return server


def latency(port: int, rounds: int = 300, warm_up: int = 20) -> dict[str, float]:
    """One client, one route at a time with the agent key, on a keep-alive socket."""
    times = route_times(port, rounds, {"Authorization": f"Bearer {AGENT_KEY}"}, warm_up)
    return {
        "p50_ms": round(percentile(times, 50) * 1000, 2),
        "p99_ms": round(percentile(times, 99) * 1000, 2),
    }


async def _guesser(port: int, stop_at: float, statuses: Counter[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < stop_at:
            guess = f"guess-{secrets.token_hex(16)}"
            request = (
                f"GET /v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {guess}\r\n\r\n".encode()
            )
            status, _ = await exchange(reader, writer, request)
            statuses[status] += 1
    finally:
        writer.close()


def guesses(port: int, seconds: float, connections: int = 8) -> dict[str, float]:
    statuses: Counter[int] = Counter()

    async def main() -> None:
        stop_at = time.perf_counter() + seconds
        await asyncio.gather(*(_guesser(port, stop_at, statuses) for _ in range(connections)))

    asyncio.run(main())
    return {
        "checked_per_s": round(statuses[401] / seconds, 2),
        "refused_per_s": round(statuses[429] / seconds, 1),
        "checked": statuses[401],
        "answers_per_s": round(sum(statuses.values()) / seconds, 1),
    }


def gate_cost(requests: int = 50_000) -> dict[str, float]:
    """Microseconds per request of the rate-limit middleware (best of 5 runs of ``requests``
    requests, each from one of 1,000 addresses, with a known agent key), minus the bare
    application's; limits on (the defaults) and off."""
    from types import SimpleNamespace

    from app.api.middleware import RateLimits
    from app.keys.store import KeyStore
    from app.limits.limiter import RateLimiter
    from app.metrics import Metrics
    from app.settings import Settings

    async def nothing(scope: Any, receive: Any, send: Any) -> None:
        return None

    def scope_of(app: Any, n: int) -> dict[str, Any]:
        headers = [(b"authorization", f"Bearer {AGENT_KEY}".encode())]
        return {"type": "http", "path": "/v1/route", "headers": headers, "app": app,
                "client": (f"10.0.{n % 1000 // 250}.{n % 250}", 4711)}  # fmt: skip

    async def timed(call: Any, scopes: list[dict[str, Any]]) -> float:
        started = time.perf_counter()
        for scope in scopes:
            await call(scope, None, None)
        return time.perf_counter() - started

    def app_of(limits: dict[str, str]) -> Any:
        """A new app (a new limiter: nothing counted yet) whose services the gate reads."""
        values = {k.removeprefix("TOOLREACH_").lower(): int(v) for k, v in limits.items()}
        settings = Settings(_env_file=None, agent_keys=(AGENT_KEY,), **values)  # type: ignore[arg-type]
        services = SimpleNamespace(
            limiter=RateLimiter.from_settings(settings),
            keys=KeyStore.from_settings(settings),
            metrics=Metrics(),
        )
        return SimpleNamespace(state=SimpleNamespace(services=services))

    result = {}
    for mode, limits in (("on", {}), ("off", OFF)):
        bare, gated = [], []
        for _ in range(5):
            app = app_of(limits)
            scopes = [scope_of(app, n) for n in range(requests)]
            bare.append(asyncio.run(timed(nothing, scopes)))
            gated.append(asyncio.run(timed(RateLimits(nothing), scopes)))
        result[f"gate_{mode}_us"] = round((min(gated) - min(bare)) / requests * 1e6, 2)
    return result


def run_once(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="toolreach-ratelimits-") as tmp,
        start_server(Path(tmp), {} if mode == "on" else OFF) as server,
    ):
        port = server.port
        result: dict[str, Any] = {"mode": mode, **latency(port)}
        load = load_clients(port, args.clients, args.seconds, AGENT_KEY)
        result.update({f"load_{k}": v for k, v in load.items()})
        result.update({f"guess_{k}": v for k, v in guesses(port, args.guess_seconds).items()})
    print(json.dumps(result), file=sys.stderr, flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--rounds", type=int, default=3)
    cli.add_argument("--seconds", type=float, default=15)
    cli.add_argument("--guess-seconds", type=float, default=10)
    cli.add_argument("--clients", type=int, default=16)
    cli.add_argument("--gate-only", action="store_true")
    args = cli.parse_args(argv)
    gate = gate_cost()
    if args.gate_only:
        print(json.dumps(gate))
        return
    runs = []
    for n in range(args.rounds):  # the order swapped each round
        for mode in ("off", "on") if n % 2 == 0 else ("on", "off"):
            runs.append(run_once(mode, args))
    figures = [k for k in runs[0] if k != "mode"]
    medians = {
        mode: {k: statistics.median(r[k] for r in runs if r["mode"] == mode) for k in figures}
        for mode in ("off", "on")
    }
    print(json.dumps({"gate": gate, "medians": medians, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
