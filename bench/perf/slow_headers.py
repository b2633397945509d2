"""Slow headers (issue 21 part 4): ``--connections`` sockets that send part of a request's
headers and then nothing, against a real ``toolreach serve`` with its default settings, this
code and (``--baseline DIR``) another checkout, one after the other, side by side.

For each server: how many sockets were answered 503 at once (the connection cap), how many
were closed by the server within ``--watch`` seconds and when (the header timeout), how many
were still open then, and route latency (one keep-alive client opened before the sockets, one
route at a time) while they were held.

    .venv/bin/python -m bench.perf.slow_headers [--connections 5000] [--watch 20] [--baseline DIR]
"""

from __future__ import annotations

import json
import selectors
import socket
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import QUERIES, ROOT, add_baseline, parser, percentile
from bench.servers import Server, read_answer, route_request

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def server(code: Path, workdir: Path) -> Server:
    env = {
        "TOOLREACH_DATABASE_URL": f"sqlite:///{workdir}/{code.name}.db",
        "TOOLREACH_LOAD_DEMO": "true",
        "TOOLREACH_LOG_LEVEL": "error",
    }
    served = Server(code, env, cwd=workdir, wait=False)
    served.wait_ready(600)
    return served


def route_once(sock: socket.socket, reader: Any, i: int) -> float:
    started = time.perf_counter()
    sock.sendall(route_request(QUERIES[i % len(QUERIES)], {}))
    read_answer(reader)
    return time.perf_counter() - started


def bench(port: int, connections: int, watch: float) -> dict[str, Any]:
    client = socket.create_connection(("127.0.0.1", port))
    reader = client.makefile("rb")
    idle = [route_once(client, reader, i) for i in range(100)]
    selector = selectors.DefaultSelector()
    opened_at = time.perf_counter()
    for _ in range(connections):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(PARTIAL)
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    held = []
    refused = closed = 0
    closed_at: list[float] = []
    deadline = opened_at + watch
    i = 0
    while time.perf_counter() < deadline and len(selector.get_map()):
        held.append(route_once(client, reader, i))
        i += 1
        for key, _ in selector.select(timeout=0.05):
            held_open = key.fileobj
            assert isinstance(held_open, socket.socket)
            try:
                data = held_open.recv(65536)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                refused += 1
            else:
                closed += 1
                closed_at.append(time.perf_counter() - opened_at)
            selector.unregister(held_open)
            held_open.close()
    still_open = len(selector.get_map())
    for key in list(selector.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    client.close()
    return {
        "refused_503": refused,
        "closed_by_server": closed,
        "closed_after_s_max": round(max(closed_at), 1) if closed_at else None,
        "still_open_after_watch": still_open,
        "route_p50_p99_ms_idle": [round(percentile(idle, q) * 1000, 1) for q in (50, 99)],
        "route_p50_p99_ms_held": [round(percentile(held, q) * 1000, 1) for q in (50, 99)],
    }


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--connections", type=int, default=5000)
    cli.add_argument("--watch", type=float, default=20)
    add_baseline(cli)
    args = cli.parse_args(argv)
    results: dict[str, Any] = {"connections": args.connections, "watch_s": args.watch}
    with tempfile.TemporaryDirectory() as workdir:
        codes = {"baseline": args.baseline, "this": ROOT}
        for label, code in codes.items():
            if code is not None:
                with server(code.resolve(), Path(workdir)) as served:
                    results[label] = bench(served.port, args.connections, args.watch)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
