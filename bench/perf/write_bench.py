"""Write benchmark (issue 21): single-card writes at 10,000 tools, routes during a 10,000-card
import, and two replicas on one Postgres, each against real uvicorn servers, side by side in
one run.

``writes`` — POST, PUT and DELETE of one card on a server holding ``--tools`` synthetic cards
(p50, p99 over ``--rounds``), each write alternated with one bare embedding of its card's text
in this process, so the drift of this shared VM falls on both alike. With ``--baseline DIR``
(another checkout, e.g. /work/main) a second server runs that code on a copy of the same
database, and its writes alternate with this one's.

``import`` — routes (one keep-alive client, one at a time) against the ``--tools`` namespace:
idle, then while ``--import-size`` synthetic cards are imported into another namespace as one
streamed NDJSON request — model, rows and index merge included — then after it, with the
import's throughput (cards/s). ``--import-rounds`` rounds, each on a fresh copy of the
database; with ``--baseline DIR``, each round also runs that checkout's server, alternated
with this one's; ``import_medians`` gives each one's medians over the rounds.

``replicas`` — two servers on one database, with LISTEN (the default) and with polling only
(``--replica-modes``): a card POSTed to A, the time until B routes its query to it, from A's
answer and from the request (``--replica-rounds``); the same for a delete (B's ``/readyz``
revision, read from memory); and feedback for a route A just answered, sent to B at once
(and to A): the share accepted and the time taken.

Every server uses the service's default (real) encoder; the synthetic registry's vectors are
seeded random unit vectors stored under that model's name (bench.registries), so the
servers start fast; written cards are embedded for real.

    .venv/bin/python -m bench.perf.write_bench [--tools 10000] [--rounds 100] [--baseline DIR]
        [--sections writes import replicas] [--import-rounds 1] [--replica-rounds 200]
        [--replica-modes listen polling] [--json OUT]
"""

from __future__ import annotations

import json
import os
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx

from app import migrate
from app.services import build_encoder
from app.settings import Settings
from bench.common import QUERIES, ROOT, add_baseline, add_json, ms, parser, percentile, write_report
from bench.registries import fill_database, synthetic_card
from bench.servers import Server, read_answer, route_request, scratch_database

KEY = "write-bench-admin-key-0123456789"
HEADERS = {"Authorization": f"Bearer {KEY}"}
WARM_UP = 5


def summary(seconds: list[float]) -> dict[str, float]:
    return {
        "p50_ms": ms(percentile(seconds, 50)),
        "p99_ms": ms(percentile(seconds, 99)),
        "n": len(seconds),
    }


def database(template: str | None = None) -> AbstractContextManager[str]:
    """A fresh Postgres database (a copy of ``template`` if given), dropped afterwards."""
    return scratch_database("toolreach_wbench", template)


class Served(Server):
    """``toolreach serve`` from the checkout ``tree`` on ``url``, with a keep-alive client,
    ready once the start-up's background work is done."""

    def __init__(self, tree: Path, url: str, **env: str) -> None:
        handle, name = tempfile.mkstemp(prefix="wbench-server-", suffix=".log")
        os.close(handle)
        settings = {"TOOLREACH_DATABASE_URL": url, "TOOLREACH_ADMIN_KEYS": KEY}
        super().__init__(
            tree, {**settings, "TOOLREACH_LOG_LEVEL": "warning", **env}, log=Path(name)
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)
        deadline = time.monotonic() + 900
        while not self.settled():
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"the server did not settle; see {self.log}")
            time.sleep(0.25)

    def settled(self) -> bool:
        """Whether the start-up's background work is done: the look-alikes' first full
        computation (~10 s of a core at 10,000 tools) would otherwise fall on the first
        rounds measured, which a steady-state figure should not include."""
        answer = self.http.get("/v1/lookalikes", params={"limit": 1}, headers=HEADERS)
        return answer.status_code == 200 and bool(answer.json()["complete"])

    def revision(self) -> int:
        revision: int = self.http.get("/readyz", headers=HEADERS).json()["revision"]
        return revision

    def close(self) -> None:
        self.http.close()
        self.stop()


class Clock:
    """``with Clock() as clock: ...``, then ``clock.seconds``."""

    def __enter__(self) -> Clock:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.seconds = time.perf_counter() - self.started


def card_body(i: int, tag: str) -> dict[str, Any]:
    card = synthetic_card(1_000_000 + i, random.Random(i)).model_dump(mode="json")
    card["name"] = f"written_{tag}_{i}"
    return card


def write_series(
    servers: dict[str, Served], encoder: Any, rounds: int, baseline_rounds: int
) -> dict[str, Any]:
    """POST, PUT, DELETE of one card, each server in turn, with a bare embedding beside (the
    baseline only in the first ``baseline_rounds``: a write there may take seconds)."""
    from app.routing import embedding_text
    from app.tools.catalog import card_to_doc
    from registry.card import ToolCard

    times: dict[str, dict[str, list[float]]] = {
        n: {"post": [], "put": [], "delete": []} for n in servers
    }
    bare: list[float] = []
    for i in range(-WARM_UP, rounds):
        for label, server in servers.items():
            if label == "baseline" and i >= baseline_rounds:
                continue
            body = card_body(i + WARM_UP, label)
            text = embedding_text(card_to_doc(ToolCard.model_validate(body)))
            with Clock() as embedding:
                encoder.encode([text])
            with Clock() as post:
                answer = server.http.post("/v1/tools", json=body, headers=HEADERS)
            assert answer.status_code == 201, answer.text
            changed = {**body, "description": body["description"] + " Now also in bulk."}
            path = f"/v1/tools/{body['name']}"
            with Clock() as put:
                answer = server.http.put(path, json=changed, headers=HEADERS)
            assert answer.status_code == 200, answer.text
            with Clock() as delete:
                answer = server.http.delete(path, headers=HEADERS)
            assert answer.status_code == 204, answer.text
            if i >= 0:
                times[label]["post"].append(post.seconds)
                times[label]["put"].append(put.seconds)
                times[label]["delete"].append(delete.seconds)
                bare.append(embedding.seconds)
    out: dict[str, Any] = {"bare_embedding": summary(bare)}
    for label, series in times.items():
        out[label] = {kind: summary(values) for kind, values in series.items()}
        out[label]["post_p50_minus_embedding_ms"] = round(
            out[label]["post"]["p50_ms"] - out["bare_embedding"]["p50_ms"], 2
        )
    return out


def route_once(sock: socket.socket, reader: Any, query: str) -> float:
    request = route_request(query, {})
    started = time.perf_counter()
    sock.sendall(request)
    status, _ = read_answer(reader)
    if status != b"200":
        raise RuntimeError(f"route answered {status.decode()}")
    return time.perf_counter() - started


def by_tenth(offsets: list[float], seconds: list[float]) -> list[dict[str, float]]:
    """p50/p99/max of the routes sent in each tenth of the import's duration (where in the
    import, parse and embedding or the final write and merge, the slow routes fall)."""
    end = max(offsets, default=0.0) or 1.0
    tenths: list[list[float]] = [[] for _ in range(10)]
    for at, took in zip(offsets, seconds, strict=True):
        tenths[min(9, int(at / end * 10))].append(took)
    return [
        {**summary(values), "max_ms": ms(max(values))} if values else {"n": 0} for values in tenths
    ]


def routes_during_import(server: Served, size: int, idle_rounds: int = 300) -> dict[str, Any]:
    """Route latency idle, during a streamed NDJSON import of ``size`` cards, and after."""
    rng = random.Random(99)
    lines = [
        json.dumps({**synthetic_card(i, rng).model_dump(mode="json"), "namespace": "imported"})
        for i in range(size)
    ]
    body = ("\n".join(lines) + "\n").encode()
    phases: dict[str, list[float]] = {"idle": [], "during": [], "after": []}
    done = threading.Event()
    result: dict[str, Any] = {}

    def run_import() -> None:
        def chunks() -> Iterator[bytes]:
            for start in range(0, len(body), 65_536):
                yield body[start : start + 65_536]

        headers = {**HEADERS, "Content-Type": "application/x-ndjson"}
        started = time.perf_counter()
        answer = server.http.post("/v1/tools/bulk", content=chunks(), headers=headers)
        result["import_s"] = round(time.perf_counter() - started, 2)
        result["import_status"] = answer.status_code
        result["created"] = len(answer.json().get("created", []))
        done.set()

    with (
        socket.create_connection(("127.0.0.1", server.port)) as sock,
        sock.makefile("rb") as reader,
    ):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(-WARM_UP, idle_rounds):
            took = route_once(sock, reader, QUERIES[i % len(QUERIES)])
            if i >= 0:
                phases["idle"].append(took)
        thread = threading.Thread(target=run_import)
        began = time.perf_counter()
        thread.start()
        i = 0
        offsets: list[float] = []  # when each route during the import was sent
        while not done.is_set():
            offsets.append(time.perf_counter() - began)
            phases["during"].append(route_once(sock, reader, QUERIES[i % len(QUERIES)]))
            i += 1
        thread.join()
        for i in range(idle_rounds):
            phases["after"].append(route_once(sock, reader, QUERIES[i % len(QUERIES)]))
    out: dict[str, Any] = {phase: summary(values) for phase, values in phases.items()}
    out.update(result, import_bytes=len(body))
    out["during_by_tenth"] = by_tenth(offsets, phases["during"])
    slowest = sorted(zip(phases["during"], offsets, strict=True), reverse=True)[:10]
    out["during_slowest"] = [{"ms": ms(took), "at_s": round(at, 2)} for took, at in slowest]
    out["during_p99_over_idle_p99"] = round(out["during"]["p99_ms"] / out["idle"]["p99_ms"], 2)
    out["cards_per_s"] = round(size / result["import_s"], 1)
    out["loadavg_after"] = os.getloadavg()
    return out


def import_rounds(trees: dict[str, Path], template: str, size: int, rounds: int) -> dict[str, Any]:
    """``routes_during_import`` for each checkout in ``trees``, alternated, ``rounds`` times;
    then each one's medians over the rounds."""
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    for round_ in range(rounds):
        for label, tree in trees.items():
            print(f"  round {round_ + 1}/{rounds}: {label}", file=sys.stderr, flush=True)
            with database(template) as url:
                server = Served(tree, url)
                try:
                    runs[label].append(
                        {"loadavg_before": os.getloadavg(), **routes_during_import(server, size)}
                    )
                finally:
                    server.close()
            print(json.dumps(runs[label][-1]), file=sys.stderr, flush=True)
    medians = {
        label: {
            "idle_p99_ms": statistics.median(r["idle"]["p99_ms"] for r in found),
            "during_p50_ms": statistics.median(r["during"]["p50_ms"] for r in found),
            "during_p99_ms": statistics.median(r["during"]["p99_ms"] for r in found),
            "during_p99_over_idle_p99": statistics.median(
                r["during_p99_over_idle_p99"] for r in found
            ),
            "import_s": statistics.median(r["import_s"] for r in found),
            "cards_per_s": statistics.median(r["cards_per_s"] for r in found),
            "loadavg_1min": statistics.median(r["loadavg_before"][0] for r in found),
        }
        for label, found in runs.items()
    }
    return {"rounds": runs, "import_medians": medians}


def until(condition: Any, seconds: float = 30.0) -> float:
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > seconds:
            raise RuntimeError("the other replica did not catch up")
    return time.perf_counter()


def routed_top(server: Served, query: str) -> str:
    answer = server.http.post("/v1/route", json={"query": query, "k": 1}, headers=HEADERS)
    assert answer.status_code == 200, answer.text
    name: str = answer.json()["candidates"][0]["name"]
    return name


def replica_lag(a: Served, b: Served, rounds: int, deletes: bool) -> dict[str, Any]:
    """A card POSTed to A (with a word no other card has): the time until B routes the card's
    query to it, from A's answer and from the request; then its delete, and (``deletes``) the
    time until B's index has the delete's revision (B's ``/readyz``)."""
    routed_after_answer: list[float] = []
    routed_after_request: list[float] = []
    delete_after_answer: list[float] = []
    for i in range(-WARM_UP, rounds):
        body = card_body(50_000 + i + WARM_UP, "replica")
        word = f"zyqx{i + WARM_UP}"
        body["description"] = f"Handles the {word} ledger. {body['description']}"
        query = f"handle the {word} ledger"
        sent = time.perf_counter()
        assert a.http.post("/v1/tools", json=body, headers=HEADERS).status_code == 201
        answered = time.perf_counter()
        seen = until(lambda q=query, n=body["name"]: routed_top(b, q) == n)
        if i >= 0:
            routed_after_answer.append(seen - answered)
            routed_after_request.append(seen - sent)
        assert a.http.delete(f"/v1/tools/{body['name']}", headers=HEADERS).status_code == 204
        answered = time.perf_counter()
        if not deletes:
            continue
        revision = a.revision()
        seen = until(lambda revision=revision: b.revision() >= revision)
        if i >= 0:
            delete_after_answer.append(seen - answered)
    out = {
        "write_routed_on_b_after_a_answered": summary(routed_after_answer),
        "write_routed_on_b_after_request_sent": summary(routed_after_request),
    }
    if deletes:
        out["delete_seen_on_b_after_a_answered"] = summary(delete_after_answer)
    return out


def feedback_elsewhere(a: Served, b: Served, rounds: int) -> dict[str, Any]:
    """Feedback for a route A has just answered, sent at once to B (and, in turn, to A): the
    share accepted (200) and the time each answer took."""
    seconds: dict[str, list[float]] = {"other_replica": [], "same_replica": []}
    accepted: dict[str, int] = {"other_replica": 0, "same_replica": 0}
    statuses: dict[str, dict[str, int]] = {"other_replica": {}, "same_replica": {}}
    for i in range(-WARM_UP, rounds):
        for where, target in (("other_replica", b), ("same_replica", a)):
            route = a.http.post(
                "/v1/route", json={"query": QUERIES[i % len(QUERIES)], "k": 3}, headers=HEADERS
            )
            answer = route.json()
            report = {
                "route_id": answer["route_id"],
                "chosen": answer["candidates"][0]["name"],
                "outcome": "success",
            }
            with Clock() as took:
                response = target.http.post("/v1/feedback", json=report, headers=HEADERS)
            if i >= 0:
                code = str(response.status_code)
                statuses[where][code] = statuses[where].get(code, 0) + 1
                accepted[where] += response.status_code == 200
                seconds[where].append(took.seconds)
    return {
        f"feedback_on_{'b' if where == 'other_replica' else 'a'}_for_a_route_on_a": {
            **summary(seconds[where]),
            "accepted_share": round(accepted[where] / len(seconds[where]), 3),
            "statuses": statuses[where],
        }
        for where in seconds
    }


# No listener: its URL points at a closed port, so each replica sees the others' writes only
# at its next poll (TOOLREACH_INDEX_POLL_SECONDS) and hears no request for its route events.
POLLING_ONLY = {"TOOLREACH_LISTEN_DATABASE_URL": "postgresql://postgres@127.0.0.1:9/none"}


def replicas(template: str, rounds: int, modes: list[str]) -> dict[str, Any]:
    """Two servers on one database per mode: ``listen`` (the default) and ``polling``."""
    out: dict[str, Any] = {}
    for mode in modes:
        env = POLLING_ONLY if mode == "polling" else {}
        print(f"two replicas, {mode} ...", file=sys.stderr, flush=True)
        with database(template) as url:
            a, b = Served(ROOT, url, **env), Served(ROOT, url, **env)
            try:
                # Polling only: no delete lag (one poll interval again) and fewer feedback
                # rounds (each waits TOOLREACH_FEEDBACK_WAIT_SECONDS in vain), for time.
                listen = mode == "listen"
                out[mode] = {
                    **replica_lag(a, b, rounds, deletes=listen),
                    **feedback_elsewhere(a, b, rounds if listen else min(rounds, 50)),
                }
            finally:
                a.close()
                b.close()
        print(json.dumps(out[mode]), file=sys.stderr, flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--tools", type=int, default=10_000)
    cli.add_argument("--rounds", type=int, default=100)
    cli.add_argument("--import-size", type=int, default=10_000)
    cli.add_argument("--import-rounds", type=int, default=1)
    add_baseline(cli)
    cli.add_argument("--baseline-rounds", type=int, default=10)
    cli.add_argument(
        "--sections", nargs="+", default=["writes", "import", "replicas"],
        choices=["writes", "import", "replicas"],
    )  # fmt: skip
    cli.add_argument("--replica-rounds", type=int, default=200)
    cli.add_argument(
        "--replica-modes", nargs="+", default=["listen", "polling"], choices=["listen", "polling"]
    )
    add_json(cli)
    args = cli.parse_args(argv)
    settings = Settings(_env_file=None)
    encoder = build_encoder(settings)
    report: dict[str, Any] = {
        "encoder": encoder.name,
        "tools": args.tools,
        "cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
    }
    with database() as filled:
        print(f"filling a registry of {args.tools} tools ...", file=sys.stderr, flush=True)
        migrate.upgrade(filled)
        fill_database(filled, args.tools, encoder, real=False)
        template = filled.rsplit("/", 1)[1]
        # Copies are taken from the filled database while nobody is connected to it.
        if "writes" in args.sections:
            report["loadavg_before_writes"] = os.getloadavg()
            print("single-card writes ...", file=sys.stderr, flush=True)
            with database(template) as ours_url, database(template) as theirs_url:
                servers = {"this": Served(ROOT, ours_url)}
                if args.baseline:
                    servers["baseline"] = Served(args.baseline, theirs_url)
                try:
                    report["writes"] = write_series(
                        servers, encoder, args.rounds, args.baseline_rounds
                    )
                finally:
                    for server in servers.values():
                        server.close()
            print(json.dumps(report["writes"]), file=sys.stderr, flush=True)
        if "import" in args.sections:
            report["loadavg_before_import"] = os.getloadavg()
            print(
                f"routes during a {args.import_size}-card import ...", file=sys.stderr, flush=True
            )
            trees = {"this": ROOT, **({"baseline": args.baseline} if args.baseline else {})}
            report["import"] = import_rounds(trees, template, args.import_size, args.import_rounds)
            print(json.dumps(report["import"]["import_medians"]), file=sys.stderr, flush=True)
        if "replicas" in args.sections:
            report["loadavg_before_replicas"] = os.getloadavg()
            report["replicas"] = replicas(template, args.replica_rounds, args.replica_modes)
    write_report(report, args.json)


if __name__ == "__main__":
    main()
