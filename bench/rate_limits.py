"""The rate limits' effect and cost, side by side: limiter on (the defaults) against off (all
three limits 0), alternating, on a real `toolreach serve` with the demo catalog on SQLite.

Per round and mode: the route latency of one keep-alive client with an agent key (p50, p99),
throughput of `--clients` keep-alive clients (bench/load_client.py), then key guessing: 8
connections sending `GET /v1/tools` with a new made-up bearer key each time, for
`--guess-seconds`; a 401 is a guess the service checked, a 429 one it refused unread.

    python bench/rate_limits.py [--rounds 3] [--seconds 15] [--guess-seconds 10]
    python bench/rate_limits.py --gate-only

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
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load_client import QUERIES, percentile, route_request  # noqa: E402

AGENT_KEY = "bench-agent-key-" + secrets.token_hex(8)
OFF = {
    "TOOLREACH_RATE_LIMIT_PER_CLIENT": "0",
    "TOOLREACH_RATE_LIMIT_PER_KEY": "0",
    "TOOLREACH_AUTH_FAILURES_PER_CLIENT": "0",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(workdir: Path, port: int, limits: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TOOLREACH_")},
        "TOOLREACH_DATABASE_URL": f"sqlite:///{workdir / 'bench.db'}",
        "TOOLREACH_AGENT_KEYS": AGENT_KEY,
        "TOOLREACH_LOAD_DEMO": "true",
        "TOOLREACH_LOG_LEVEL": "warning",
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
        **limits,
    }
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
    proc = subprocess.Popen(command, cwd=workdir, env=env)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.25)
    proc.kill()
    raise RuntimeError("the server did not become ready")


def read_answer(reader: Any) -> bytes:
    """One HTTP/1.1 answer from a socket file: its status."""
    status, length = reader.readline().split(b" ", 2)[1], 0
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    reader.read(length)
    return bytes(status)


def latency(port: int, rounds: int = 300, warm_up: int = 20) -> dict[str, float]:
    """One client, one route at a time with the agent key, on a keep-alive socket."""
    headers = {"Authorization": f"Bearer {AGENT_KEY}"}
    times = []
    with socket.create_connection(("127.0.0.1", port)) as sock, sock.makefile("rb") as reader:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(-warm_up, rounds):
            started = time.perf_counter()
            sock.sendall(route_request(QUERIES[i % len(QUERIES)], headers))
            status = read_answer(reader)
            times.append(time.perf_counter() - started)
            if status != b"200":
                raise RuntimeError(f"route answered {status.decode()}")
    times = times[warm_up:]
    return {
        "p50_ms": round(percentile(times, 50) * 1000, 2),
        "p99_ms": round(percentile(times, 99) * 1000, 2),
    }


def throughput(port: int, clients: int, seconds: float) -> dict[str, float]:
    command = [
        sys.executable,
        str(ROOT / "bench" / "load_client.py"),
        str(port),
        "--clients",
        str(clients),
        "--seconds",
        str(seconds),
        "--bearer",
        AGENT_KEY,
    ]
    result: dict[str, float] = json.loads(
        subprocess.run(command, check=True, capture_output=True, text=True).stdout
    )
    return result


async def _guesser(port: int, stop_at: float, statuses: Counter[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < stop_at:
            guess = f"guess-{secrets.token_hex(16)}"
            writer.write(
                f"GET /v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {guess}\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            statuses[int(head.split(b" ", 2)[1])] += 1
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
        settings = Settings(_env_file=None, agent_keys=(AGENT_KEY,), **values)  # type: ignore[call-arg,arg-type]
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
    with tempfile.TemporaryDirectory(prefix="toolreach-ratelimits-") as tmp:
        port = free_port()
        proc = start_server(Path(tmp), port, {} if mode == "on" else OFF)
        try:
            result: dict[str, Any] = {"mode": mode, **latency(port)}
            load = throughput(port, args.clients, args.seconds)
            result.update({f"load_{k}": v for k, v in load.items()})
            result.update({f"guess_{k}": v for k, v in guesses(port, args.guess_seconds).items()})
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    print(json.dumps(result), file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--guess-seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--gate-only", action="store_true")
    args = parser.parse_args()
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
