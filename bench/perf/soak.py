"""Multi-replica soak (issue 21): N ``toolreach serve`` processes on one Postgres database,
mixed traffic spread round-robin across them for ``--duration`` seconds.

The bench creates a database, migrates it, imports a dataset's ``tools.jsonl`` with
``toolreach import --skip-invalid`` (the real encoder), starts ``--replicas`` servers on their
own ports and drives them with ``--concurrency`` workers in one asyncio loop on raw keep-alive
sockets (as bench.perf.load_client does, so the client takes little of the CPU it shares with
the servers).
Each worker holds one connection per replica and sends its next request to the next replica in
turn. Every request kind follows a fixed schedule of 100 slots (``MIXES``):

- ``route``: ``POST /v1/route`` with one of the dataset's queries;
- ``validate``: ``POST /v1/validate`` of the top tool of an earlier route, with its route id;
- ``feedback``: ``POST /v1/feedback`` for an earlier route (each route id once), which
  another replica answered in most cases;
- ``write``: ``POST /v1/tools`` of a new card, or ``PUT`` of one written before, in turn.

It reports throughput, p50/p99 per kind, answers by status, timeouts, each replica's RSS and
CPU seconds at the start and the end, ERROR lines in the replicas' logs, and the load average,
as a table (stdout) and JSON (``--out``). Every replica is stopped and the database dropped on
the way out, also on Ctrl-C, SIGTERM or an error.

    .venv/bin/python -m bench.perf.soak [--replicas 2] [--duration 600]
        [--mix default|write-heavy|write-steady] [--trace DIR]
        [--concurrency 16] [--data /work/shared/data/seal-tools] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import ROOT, cpu_seconds, parser, percentile, read_jsonl, rss_mib
from bench.servers import Server, exchange, python_path, scratch_database

HOOK = Path(__file__).resolve().parent / "heap_hook"
KEY = "soak-bench-admin-key-0123456789abc"
KINDS = ("route", "validate", "feedback", "write")
MIXES: dict[str, dict[str, int]] = {
    "default": {"route": 90, "validate": 5, "feedback": 4, "write": 1},
    "write-heavy": {"route": 65, "validate": 5, "feedback": 10, "write": 20},
    # As write-heavy, but the writes are a POST, a PUT and a DELETE in turn, so the catalog
    # keeps its size: what memory does over time with the data it holds unchanged.
    "write-steady": {"route": 65, "validate": 5, "feedback": 10, "write": 20},
}
STEADY = ("write-steady",)
EXPECTED = {"route": 200, "validate": 200, "feedback": 200, "post": 201, "put": 200, "delete": 204}
REQUEST_TIMEOUT_S = 30.0


# --- pure parts ---------------------------------------------------------------------------


def schedule(mix: Mapping[str, int], seed: int = 0) -> list[str]:
    """The kinds of 100 consecutive requests: exactly ``mix[kind]`` of each, shuffled."""
    if sum(mix.values()) != 100 or any(k not in KINDS or n < 0 for k, n in mix.items()):
        raise ValueError(f"a mix gives shares of {KINDS} in percent (≥ 0), summing to 100: {mix}")
    slots = [kind for kind, share in mix.items() for _ in range(share)]
    random.Random(seed).shuffle(slots)
    return slots


def http_request(method: str, path: str, body: Any) -> bytes:
    """One HTTP/1.1 keep-alive request with a JSON body, bearing the bench's admin key."""
    data = json.dumps(body).encode()
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


@dataclass
class Tally:
    """What the load generator saw: seconds per answered request, answers by status."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    reconnects: int = 0  # requests sent again: the server closed an idle keep-alive connection
    rss: list[tuple[int, list[float]]] = field(default_factory=list)  # (second, MiB a replica)

    def add(self, kind: str, status: int | str, took: float) -> None:
        self.statuses[f"{kind} {status}"] += 1
        if status == EXPECTED.get(kind):
            self.seconds[kind].append(took)

    def requests(self) -> int:
        return sum(self.statuses.values())

    def errors(self) -> dict[str, int]:
        def unexpected(key: str) -> bool:
            kind, status = key.split()
            return status != str(EXPECTED[kind])

        return {key: n for key, n in self.statuses.items() if unexpected(key)}


def summarize(tally: Tally, seconds: float) -> dict[str, Any]:
    """Throughput, then p50/p99 (ms) and counts per kind, then the unexpected answers."""
    kinds: dict[str, Any] = {}
    for kind in EXPECTED:
        values = tally.seconds.get(kind, [])
        sent = sum(n for key, n in tally.statuses.items() if key.split()[0] == kind)
        if sent:
            kinds[kind] = {
                "requests": sent,
                "ok": len(values),
                "p50_ms": round(percentile(values, 50) * 1000, 1),
                "p99_ms": round(percentile(values, 99) * 1000, 1),
            }
    errors = tally.errors()
    return {
        "seconds": round(seconds, 1),
        "requests": tally.requests(),
        "requests_per_s": round(tally.requests() / seconds, 1) if seconds else 0.0,
        "error_count": sum(errors.values()),
        "errors": errors,
        "keep_alive_resends": tally.reconnects,
        "kinds": kinds,
    }


def table(report: Mapping[str, Any]) -> str:
    """The report as Markdown tables: the kinds, then the replicas."""
    load = report["load"]
    lines = [
        f"{report['replicas']} replicas, mix {report['mix']}, {load['seconds']} s, "
        f"{report['concurrency']} workers: {load['requests']} requests, "
        f"{load['requests_per_s']} req/s, {load['error_count']} unexpected answers "
        f"{load['errors'] or ''} ({load.get('keep_alive_resends', 0)} sent again after an idle "
        "keep-alive close)",
        "",
        "| kind | requests | ok | p50 ms | p99 ms |",
        "|---|---|---|---|---|",
    ]
    for kind, row in load["kinds"].items():
        lines.append(
            f"| {kind} | {row['requests']} | {row['ok']} | {row['p50_ms']} | {row['p99_ms']} |"
        )
    lines += [
        "",
        "| replica | RSS start MiB | RSS end MiB | CPU s | ERROR lines |",
        "|---|---|---|---|---|",
    ]
    for i, rep in enumerate(report["replica_stats"]):
        lines.append(
            f"| {i} | {rep['rss_start_mib']} | {rep['rss_end_mib']} | {rep['cpu_s']} "
            f"| {rep['error_lines']} |"
        )
    return "\n".join(lines)


# --- processes ----------------------------------------------------------------------------


def toolreach_env(url: str, extra: Mapping[str, str]) -> dict[str, str]:
    # bench/perf/heap_hook's sitecustomize only acts when --trace sets its folder.
    hook = f":{HOOK}" if "BENCH_TRACE_DIR" in extra else ""
    return {
        **os.environ,
        "PYTHONPATH": f"{python_path(ROOT)}{hook}",
        "HF_HUB_OFFLINE": "1",
        "TOOLREACH_DATABASE_URL": url,
        "TOOLREACH_ADMIN_KEYS": KEY,
        "TOOLREACH_LOG_LEVEL": "warning",
        **extra,
    }


def toolreach(*args: str, env: Mapping[str, str]) -> None:
    """Run a ``toolreach`` command of this venv to completion (migrate, import)."""
    command = [str(Path(sys.executable).parent / "toolreach"), *args]
    subprocess.run(command, env=env, cwd=tempfile.gettempdir(), check=True)


class Replicas:
    """``n`` ``toolreach serve`` processes, each on its own port and log file."""

    def __init__(self, n: int, env: Mapping[str, str]) -> None:
        self.log_dir = Path(tempfile.mkdtemp(prefix="toolreach-soak-"))
        self.logs = [self.log_dir / f"replica-{i}.log" for i in range(n)]
        # a new session each: Ctrl-C reaches the bench, which stops them
        self.servers = [
            Server(ROOT, env, base={}, log=log, new_session=True, wait=False) for log in self.logs
        ]
        self.ports = [server.port for server in self.servers]

    def wait_ready(self, seconds: float = 600) -> None:
        for server in self.servers:
            server.wait_ready(seconds)

    def rss(self) -> list[float]:
        return [rss_mib(server.proc.pid) for server in self.servers]

    def cpu(self) -> list[float]:
        return [round(cpu_seconds(server.proc.pid), 1) for server in self.servers]

    def error_lines(self) -> list[int]:
        return [
            sum(1 for line in log.read_text(errors="replace").splitlines() if "ERROR" in line)
            for log in self.logs
        ]

    def stop(self) -> list[int | None]:
        """SIGTERM each, wait up to 30 s for a clean exit, then SIGKILL; the exit codes."""
        for server in self.servers:
            if server.proc.poll() is None:
                server.proc.terminate()
        return [server.stop(timeout=30) for server in self.servers]


# --- the load -----------------------------------------------------------------------------


@dataclass
class Traffic:
    """What the workers share: the schedule, the queries, the routes answered, the cards."""

    slots: list[str]
    queries: list[str]
    cards: list[dict[str, Any]]
    counter: Iterator[int] = field(default_factory=itertools.count)
    routes: collections.deque[tuple[str, str]] = field(
        default_factory=lambda: collections.deque(maxlen=2000)
    )
    written: list[dict[str, Any]] = field(default_factory=list)
    writes: int = 0
    steady: bool = False  # POST, PUT, DELETE in turn (the "write-steady" mix)

    def next_request(self) -> tuple[str, bytes]:
        """The kind and bytes of the next request."""
        n = next(self.counter)
        kind = self.slots[n % len(self.slots)]
        if kind in ("validate", "feedback") and not self.routes:
            kind = "route"
        if kind == "route":
            body = {"query": self.queries[n % len(self.queries)], "k": 3}
            return kind, http_request("POST", "/v1/route", body)
        if kind == "validate":
            route_id, name = self.routes[-1]
            body = {"name": name, "arguments": {}, "route_id": route_id}
            return kind, http_request("POST", "/v1/validate", body)
        if kind == "feedback":
            route_id, name = self.routes.pop()  # the newest: feedback at once
            body = {"route_id": route_id, "chosen": name, "outcome": "success"}
            return kind, http_request("POST", "/v1/feedback", body)
        return self.next_write()

    def next_write(self) -> tuple[str, bytes]:
        """A POST of a new card and a PUT of one written before, in turn (steady: then a
        DELETE of the oldest card written, once 50 are, and PUTs of the newest)."""
        self.writes += 1
        if self.steady and self.writes % 3 == 0 and len(self.written) > 50:
            card = self.written.pop(0)
            return "delete", http_request("DELETE", f"/v1/tools/{card['name']}", None)
        if self.steady and self.writes % 3 == 2 and self.written:
            card = self.written[-1]
            changed = {**card, "description": f"{card['description']} Revised {self.writes}."}
            return "put", http_request("PUT", f"/v1/tools/{card['name']}", changed)
        if not self.steady and self.writes % 2 == 0 and self.written:
            card = random.Random(self.writes).choice(self.written)
            changed = {**card, "description": f"{card['description']} Revised {self.writes}."}
            return "put", http_request("PUT", f"/v1/tools/{card['name']}", changed)
        base = self.cards[self.writes % len(self.cards)]
        name = re.sub(r"[^A-Za-z0-9_.:-]", "_", f"soak_{self.writes}_{base['name']}")[:64]
        return "post", http_request("POST", "/v1/tools", {**base, "name": name})

    def answered(self, kind: str, request: bytes, status: int, body: bytes) -> None:
        """Remember what later requests build on: a route's id and top tool, a card once
        its POST is answered (a PUT sent before would create it, and the POST then be a 409)."""
        if kind == "route" and status == 200:
            answer = json.loads(body)
            if answer["candidates"]:
                self.routes.append((answer["route_id"], answer["candidates"][0]["name"]))
        elif kind == "post" and status == 201:
            self.written.append(json.loads(request.partition(b"\r\n\r\n")[2]))


def replica_for(worker: int, sent: int, replicas: int) -> int:
    """Round robin: each worker's requests go to each replica in turn, from its own start."""
    return (worker + sent) % replicas


# uvicorn closes a keep-alive connection idle for 5 s (``timeout_keep_alive``). A request sent
# on one as it closes reads EOF before any byte; HTTP clients send it again on a new
# connection, and so does the bench, counting it apart (a drop on a busier connection is an
# error).
KEEP_ALIVE_CLOSE_S = 4.0


class Connections:
    """One worker's keep-alive connection to each replica, opened when first needed."""

    def __init__(self, ports: Sequence[int], tally: Tally) -> None:
        self.ports = ports
        self.tally = tally
        self.open: dict[int, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}
        self.used: dict[int, float] = {}

    async def send(self, replica: int, request: bytes) -> tuple[int, bytes]:
        conn = self.open.get(replica)
        if conn is not None:
            idle = time.perf_counter() - self.used[replica]
            try:
                return await self._exchange(replica, conn, request)
            except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError) as exc:
                closed_idle = not getattr(exc, "partial", b"") and idle >= KEEP_ALIVE_CLOSE_S
                self.drop(replica)
                if not closed_idle:
                    raise
                self.tally.reconnects += 1
        conn = await asyncio.open_connection("127.0.0.1", self.ports[replica])
        self.open[replica] = conn
        return await self._exchange(replica, conn, request)

    async def _exchange(
        self, replica: int, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], request: bytes
    ) -> tuple[int, bytes]:
        answer = await exchange(*conn, request)
        self.used[replica] = time.perf_counter()
        return answer

    def drop(self, replica: int) -> None:
        conn = self.open.pop(replica, None)
        if conn is not None:
            conn[1].close()

    def close(self) -> None:
        for replica in list(self.open):
            self.drop(replica)


async def worker(
    index: int, ports: Sequence[int], traffic: Traffic, tally: Tally, stop_at: float
) -> None:
    conns = Connections(ports, tally)
    sent = 0
    try:
        while time.perf_counter() < stop_at:
            replica = replica_for(index, sent, len(ports))
            sent += 1
            kind, request = traffic.next_request()
            started = time.perf_counter()
            try:
                status, body = await asyncio.wait_for(
                    conns.send(replica, request), REQUEST_TIMEOUT_S
                )
            except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
                tally.add(kind, type(exc).__name__, time.perf_counter() - started)
                conns.drop(replica)
                continue
            tally.add(kind, status, time.perf_counter() - started)
            traffic.answered(kind, request, status, body)
    finally:
        conns.close()


async def progress(
    tally: Tally, started: float, stop_at: float, every: float, rss: Callable[[], list[float]]
) -> None:
    """A line every ``every`` seconds: requests so far, their rate, the unexpected answers and
    each replica's RSS (also kept in ``tally.rss``, to see whether memory levels off)."""
    last = 0
    while time.perf_counter() < stop_at:
        await asyncio.sleep(min(every, max(0.0, stop_at - time.perf_counter())))
        total, at, now = tally.requests(), time.perf_counter() - started, rss()
        tally.rss.append((round(at), now))
        print(
            f"[{at:6.0f} s] {total} requests ({(total - last) / every:.0f}/s), "
            f"unexpected: {tally.errors() or 0}, RSS MiB: {now}",
            file=sys.stderr,
            flush=True,
        )
        last = total


async def drive(
    ports: Sequence[int],
    traffic: Traffic,
    concurrency: int,
    seconds: float,
    every: float,
    rss: Callable[[], list[float]],
) -> Tally:
    tally = Tally()
    started = time.perf_counter()
    stop_at = started + seconds
    await asyncio.gather(
        progress(tally, started, stop_at, every, rss),
        *(worker(i, ports, traffic, tally, stop_at) for i in range(concurrency)),
    )
    return tally


# --- the run ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    cards = read_jsonl(args.data / "tools.jsonl")
    queries = [q["query"] for q in read_jsonl(args.data / "queries.jsonl")]
    env_extra = dict(item.split("=", 1) for item in args.env)
    if args.trace is not None:  # tracemalloc in each replica, snapshots every --trace-every s
        args.trace.mkdir(parents=True, exist_ok=True)
        env_extra["BENCH_TRACE_DIR"] = str(args.trace.resolve())
        env_extra["BENCH_TRACE_EVERY"] = str(args.trace_every)
    report: dict[str, Any] = {
        "replicas": args.replicas,
        "mix": args.mix,
        "shares": MIXES[args.mix],
        "concurrency": args.concurrency,
        "data": str(args.data),
        "tools": len(cards),
        "cpus": os.cpu_count(),
        "settings": env_extra,
        "loadavg_before": os.getloadavg(),
    }
    with scratch_database("toolreach_soak") as url:
        env = toolreach_env(url, env_extra)
        untraced = {k: v for k, v in env.items() if not k.startswith("BENCH_TRACE_")}
        print(f"migrating and importing {len(cards)} tools ...", file=sys.stderr, flush=True)
        toolreach("migrate", env=untraced)  # tracemalloc in the replicas only
        catalog = str((args.data / "tools.jsonl").resolve())  # toolreach runs elsewhere
        toolreach("import", catalog, "--skip-invalid", env=untraced)
        replicas = Replicas(args.replicas, env)
        try:
            replicas.wait_ready()
            print(f"{args.replicas} replicas ready: {replicas.ports}", file=sys.stderr, flush=True)
            rss_start, cpu_start = replicas.rss(), replicas.cpu()
            traffic = Traffic(schedule(MIXES[args.mix]), queries, cards, steady=args.mix in STEADY)
            usage = resource.getrusage(resource.RUSAGE_SELF)
            started = time.perf_counter()
            tally = asyncio.run(
                drive(
                    replicas.ports,
                    traffic,
                    args.concurrency,
                    args.duration,
                    args.every,
                    replicas.rss,
                )
            )
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_SELF)
            rss_end, cpu_end = replicas.rss(), replicas.cpu()
            report["load"] = summarize(tally, elapsed)
            report["client_cpu_s"] = round(
                after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime, 1
            )
            report["cards_written"] = len(traffic.written)
            report["rss_mib_over_time"] = tally.rss
            report["loadavg_after"] = os.getloadavg()
        finally:
            codes = replicas.stop()
            report["exit_codes"] = codes
            errors = replicas.error_lines()
            print(f"replica logs: {replicas.log_dir}", file=sys.stderr, flush=True)
        report["replica_stats"] = [
            {
                "rss_start_mib": rss_start[i],
                "rss_end_mib": rss_end[i],
                "cpu_s": round(cpu_end[i] - cpu_start[i], 1),
                "error_lines": errors[i],
            }
            for i in range(args.replicas)
        ]
    return report


def stop_on_signals() -> None:
    """SIGINT and SIGTERM unwind the run, so the replicas are stopped and the database
    dropped: also SIGINT to a bench started in the background, which would ignore it."""

    def handler(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--replicas", type=int, default=2)
    cli.add_argument("--duration", type=float, default=600, help="seconds of load (600)")
    cli.add_argument("--mix", choices=sorted(MIXES), default="default")
    cli.add_argument("--concurrency", type=int, default=16, help="workers in flight (16)")
    cli.add_argument("--data", type=Path, default=Path("/work/shared/data/seal-tools"))
    cli.add_argument("--every", type=float, default=10, help="seconds between progress lines")
    cli.add_argument(
        "--env", action="append", default=[], metavar="TOOLREACH_X=V",
        help="a setting for every replica (repeatable)",
    )  # fmt: skip
    cli.add_argument("--out", type=Path, help="also write the JSON report here")
    cli.add_argument(
        "--trace", type=Path, help="tracemalloc in each replica: snapshots into this folder"
    )
    cli.add_argument("--trace-every", type=float, default=60, help="seconds between snapshots")
    args = cli.parse_args(argv)
    stop_on_signals()
    try:
        report = run(args)
    except KeyboardInterrupt:
        print("interrupted: the replicas are stopped, the database dropped", file=sys.stderr)
        raise SystemExit(130) from None
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(table(report))
    print(text)


if __name__ == "__main__":
    main()
