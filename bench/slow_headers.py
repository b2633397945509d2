"""Slow headers (issue 21 part 4): ``--connections`` sockets that send part of a request's
headers and then nothing, against a real ``toolreach serve`` with its default settings, this
code and (``--baseline DIR``) another checkout, one after the other, side by side.

For each server: how many sockets were answered 503 at once (the connection cap), how many
were closed by the server within ``--watch`` seconds and when (the header timeout), how many
were still open then, and route latency (one keep-alive client opened before the sockets, one
route at a time) while they were held.

    .venv/bin/python bench/slow_headers.py [--connections 5000] [--watch 20] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from load_client import QUERIES, percentile, route_request  # noqa: E402

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def server(code: Path, workdir: Path) -> Iterator[int]:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "TOOLREACH_DATABASE_URL": f"sqlite:///{workdir}/{code.name}.db",
        "TOOLREACH_LOAD_DEMO": "true",
        "TOOLREACH_LOG_LEVEL": "error",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)], cwd=workdir, env=env
    )
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the server did not become ready")
            time.sleep(0.25)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def route_once(sock: socket.socket, reader: Any, i: int) -> float:
    started = time.perf_counter()
    sock.sendall(route_request(QUERIES[i % len(QUERIES)], {}))
    length = 0
    reader.readline()
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    reader.read(length)
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
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                refused += 1
            else:
                closed += 1
                closed_at.append(time.perf_counter() - opened_at)
            selector.unregister(sock)
            sock.close()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=5000)
    parser.add_argument("--watch", type=float, default=20)
    parser.add_argument("--baseline", type=Path, help="another checkout, e.g. /work/main")
    args = parser.parse_args()
    results: dict[str, Any] = {"connections": args.connections, "watch_s": args.watch}
    with tempfile.TemporaryDirectory() as workdir:
        codes = {"baseline": args.baseline, "this": ROOT}
        for label, code in codes.items():
            if code is not None:
                with server(code.resolve(), Path(workdir)) as port:
                    results[label] = bench(port, args.connections, args.watch)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
