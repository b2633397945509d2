"""A served build, for the benchmarks over HTTP: ``Server`` (``toolreach serve`` of a
checkout on a free port), the route requests they send (``route_request``, ``route_times``,
``load_clients``), reading answers (``read_answer``, ``exchange``) and a scratch Postgres
database (``scratch_database``)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from bench.common import QUERIES, ROOT, WARM_UP

PG_ADMIN = os.environ.get("TOOLREACH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def python_path(build: Path) -> str:
    """What a checkout's processes import from: its code and its Python client."""
    return f"{build}:{build / 'clients' / 'python' / 'src'}"


class Server:
    """``toolreach serve`` of the checkout ``build`` on a free port of 127.0.0.1, with
    ``env`` over ``base`` (default: this environment), ready when made (``wait=False``:
    after ``wait_ready``). ``log``: its output there; ``new_session``: a Ctrl-C to the
    benchmark does not reach it (the benchmark stops it)."""

    def __init__(
        self,
        build: Path,
        env: Mapping[str, str],
        *,
        base: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        log: Path | None = None,
        new_session: bool = False,
        wait: bool = True,
    ) -> None:
        self.build, self.port, self.log = build, free_port(), log
        variables = {**(os.environ if base is None else base), "PYTHONPATH": python_path(build)}
        output: IO[bytes] | None = None if log is None else log.open("wb")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)],
            cwd=cwd or tempfile.gettempdir(),
            env={**variables, **env},
            stdout=output,
            stderr=None if output is None else subprocess.STDOUT,
            start_new_session=new_session,
        )
        if output is not None:
            output.close()
        if wait:
            self.wait_ready()

    def ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return b" 200 " in sock.recv(64)
        except OSError:
            return False

    def wait_ready(self, seconds: float = 900) -> float:
        """Seconds from the start until ``/readyz`` answered 200; RuntimeError if the server
        exited or was not ready within ``seconds``."""
        deadline = time.monotonic() + seconds
        while not self.ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                where = f"; see {self.log}" if self.log else ""
                raise RuntimeError(f"the server of {self.build} did not become ready{where}")
            time.sleep(0.25)
        self.startup = time.perf_counter() - self.started
        return self.startup

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> str:
        """The body of a GET, on a connection of its own."""
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        request = f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n"
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.sendall(request.encode())
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).split(b"\r\n\r\n", 1)[1].decode()

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout`` s; the exit code (None: killed)."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def route_request(query: str, headers: Mapping[str, str]) -> bytes:
    """``POST /v1/route`` of one step, as prepared bytes of a keep-alive HTTP/1.1 request."""
    body = json.dumps({"query": query}).encode()
    lines = [
        "POST /v1/route HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def read_answer(reader: Any) -> tuple[bytes, bytes]:
    """One HTTP/1.1 answer from a socket's file: its status (b"200") and body."""
    status, length = reader.readline().split(b" ", 2)[1], 0
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return bytes(status), reader.read(length)


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes]:
    """One request on an open keep-alive connection: the answer's status and body."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), await reader.readexactly(_length(head))


def route_times(
    port: int,
    rounds: int,
    headers: Mapping[str, str] | None = None,
    warm_up: int = WARM_UP,
    queries: Sequence[str] = QUERIES,
    between: Callable[[int], object] | None = None,
) -> list[float]:
    """One client, one route at a time on a keep-alive socket: the seconds of each of
    ``rounds`` routes after ``warm_up`` unmeasured ones (``between(i)`` is called before
    route ``i``, untimed); RuntimeError on an answer other than 200."""
    times = []
    with socket.create_connection(("127.0.0.1", port)) as sock, sock.makefile("rb") as reader:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(-warm_up, rounds):
            if between is not None:
                between(i)
            request = route_request(queries[i % len(queries)], headers or {})
            started = time.perf_counter()
            sock.sendall(request)
            status, _ = read_answer(reader)
            times.append(time.perf_counter() - started)
            if status != b"200":
                raise RuntimeError(f"route answered {status.decode()}")
    return times[warm_up:]


def load_clients(
    port: int,
    clients: int,
    seconds: float,
    bearer: str | None = None,
    queries: Path | None = None,
    wait: bool = True,
) -> Any:
    """``bench.perf.load_client`` against ``port`` in its own process: its JSON report
    (``wait=False``: the running process, whose stdout holds it)."""
    command = [sys.executable, "-m", "bench.perf.load_client", str(port)]
    command += ["--clients", str(clients), "--seconds", str(seconds)]
    command += ["--bearer", bearer] if bearer else []
    command += ["--queries", str(queries)] if queries else []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    if not wait:
        return proc
    out, _ = proc.communicate()
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, command, out)
    return json.loads(out)


@contextmanager
def scratch_database(
    prefix: str, template: str | None = None, admin: str = PG_ADMIN
) -> Iterator[str]:
    """A new Postgres database on the server of ``admin`` (a URL of a database there to
    connect to; a copy of ``template`` if given), dropped afterwards; its URL."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    try:
        yield admin.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
