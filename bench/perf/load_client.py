"""A lean HTTP load generator for the route benchmark: N keep-alive connections, T seconds.

The clients run on the same two cores as the server, so whatever CPU they burn is taken from
the server being measured. A thread per client with httpx costs ~1 ms of CPU per request and
contends for one interpreter lock; this client is one asyncio loop in its own process writing
prepared HTTP/1.1 requests on raw sockets (~0.02 ms per request), like wrk or hey would, and
reports its own CPU time so the share it took is visible.

    python -m bench.perf.load_client PORT [--clients 16] [--seconds 30] [--queries FILE]

``--queries``: one step per line (default: the ten of QUERIES); client n starts at step
n × (steps ÷ clients), so the clients send different steps until they wrap around.

Prints one JSON object: routes_per_s, p50_ms, p99_ms, errors, requests, client_cpu_s.
"""

from __future__ import annotations

import asyncio
import json
import resource
import time
from collections.abc import Sequence

from bench.common import QUERIES, parser, percentile
from bench.servers import exchange, route_request


async def _client(
    port: int, offset: int, stop_at: float, requests: Sequence[bytes], out: dict[str, list[float]]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = offset
    try:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            status, _ = await exchange(reader, writer, requests[i % len(requests)])
            i += 1
            out["ok" if status == 200 else "error"].append(time.perf_counter() - started)
    finally:
        writer.close()


def run(
    port: int,
    clients: int,
    seconds: float,
    headers: dict[str, str],
    queries: Sequence[str] = QUERIES,
) -> dict[str, float]:
    requests = [route_request(q, headers) for q in queries]
    out: dict[str, list[float]] = {"ok": [], "error": []}

    async def main() -> None:
        stop_at = time.perf_counter() + seconds
        spread = max(1, len(requests) // clients)  # each client its own stretch of the steps
        await asyncio.gather(
            *(_client(port, n * spread, stop_at, requests, out) for n in range(clients))
        )

    asyncio.run(main())
    usage = resource.getrusage(resource.RUSAGE_SELF)
    times = out["ok"] + out["error"]
    return {
        "routes_per_s": round(len(out["ok"]) / seconds, 1),
        "p50_ms": round(percentile(times, 50) * 1000, 1),
        "p99_ms": round(percentile(times, 99) * 1000, 1),
        "errors": len(out["error"]),
        "requests": len(times),
        "client_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
    }


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("port", type=int)
    cli.add_argument("--clients", type=int, default=16)
    cli.add_argument("--seconds", type=float, default=30)
    cli.add_argument("--bearer", help="agent key, if the server requires one")
    cli.add_argument("--queries", help="a file of steps, one a line")
    args = cli.parse_args(argv)
    headers = {"Authorization": f"Bearer {args.bearer}"} if args.bearer else {}
    queries = QUERIES
    if args.queries:
        with open(args.queries, encoding="utf-8") as lines:
            queries = [line.rstrip("\n") for line in lines if line.strip()]
    print(json.dumps(run(args.port, args.clients, args.seconds, headers, queries)))


if __name__ == "__main__":
    main()
