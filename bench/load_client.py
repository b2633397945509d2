"""A lean HTTP load generator for the route benchmark: N keep-alive connections, T seconds.

The clients run on the same two cores as the server, so whatever CPU they burn is taken from
the server being measured. A thread per client with httpx costs ~1 ms of CPU per request and
contends for one interpreter lock; this client is one asyncio loop in its own process writing
prepared HTTP/1.1 requests on raw sockets (~0.02 ms per request), like wrk or hey would, and
reports its own CPU time so the share it took is visible.

    python bench/load_client.py PORT [--clients 16] [--seconds 30] [--queries FILE]

``--queries``: one step per line (default: the ten of QUERIES); client n starts at step
n × (steps ÷ clients), so the clients send different steps until they wrap around.

Prints one JSON object: routes_per_s, p50_ms, p99_ms, errors, requests, client_cpu_s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from collections.abc import Sequence

QUERIES = [
    "where is my parcel for order o1234",
    "cancel the meeting with the design team tomorrow at 3pm",
    "convert 250 euros to dollars",
    "send an email to anna@example.com about the invoice",
    "what will the weather be like in Lyon this weekend",
    "find the contract we signed with Acme last year",
    "refund the payment for subscription s99",
    "book a hotel room in Tokyo for two nights",
    "export the analytics report for March as csv",
    "restore yesterday's backup of the billing database",
]


def route_request(query: str, headers: dict[str, str]) -> bytes:
    body = json.dumps({"query": query}).encode()
    lines = [
        "POST /v1/route HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _client(
    port: int, offset: int, stop_at: float, requests: Sequence[bytes], out: dict[str, list[float]]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = offset
    try:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            writer.write(requests[i % len(requests)])
            i += 1
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            out["ok" if status == 200 else "error"].append(time.perf_counter() - started)
    finally:
        writer.close()


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else 0.0


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--bearer", help="agent key, if the server requires one")
    parser.add_argument("--queries", help="a file of steps, one a line")
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.bearer}"} if args.bearer else {}
    queries = QUERIES
    if args.queries:
        with open(args.queries, encoding="utf-8") as lines:
            queries = [line.rstrip("\n") for line in lines if line.strip()]
    print(json.dumps(run(args.port, args.clients, args.seconds, headers, queries)))


if __name__ == "__main__":
    main()
