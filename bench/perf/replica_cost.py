"""One host's throughput as one server process or as several replicas on the same cores.

A route's ranking holds the interpreter lock, so on repeated steps (the embedding cache
answers the model's part) one `toolreach serve` uses about one core whatever the core count.
This starts ``--processes`` servers of this checkout on the catalog a run of
bench.perf.route_cost filled (all reading the one SQLite file; writes are not part of the
run), warms each one's cache, then drives ``--clients`` load clients split evenly across
them for ``--rounds`` rounds, all of it on the machine's own cores, and prints per round the
summed routes/s, the worst p99 and the servers' CPU per route:

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m bench.perf.route_cost --full --distinct 200 \\
        --workdir /tmp/rc
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m bench.perf.replica_cost \\
        --db /tmp/rc/cost-….db --queries /tmp/rc/steps.txt --processes 1 2

``--queries``: one step a line (route_cost's ``steps.txt`` holds the steps it sent last).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import ROOT, add_json, cpu_seconds, load, parser, write_report
from bench.perf.route_cost import KEY, settings_env, under_load
from bench.servers import Server, load_clients


def one_round(servers: list[Server], clients: int, seconds: float, queries: Path) -> dict[str, Any]:
    before = [cpu_seconds(s.proc.pid) for s in servers]
    load_before = load()
    each = clients // len(servers)
    procs = [load_clients(s.port, each, seconds, KEY, queries, wait=False) for s in servers]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    cpu = sum(cpu_seconds(s.proc.pid) - b for s, b in zip(servers, before, strict=True))
    requests = sum(o["requests"] for o in outs)
    return {
        "processes": len(servers),
        "routes_per_s": round(sum(o["routes_per_s"] for o in outs), 1),
        "p50_ms": [o["p50_ms"] for o in outs],
        "p99_ms": max(o["p99_ms"] for o in outs),
        "errors": sum(o["errors"] for o in outs),
        "server_cpu_ms_per_route": round(cpu * 1000 / max(1, requests), 3),
        "load_before": load_before,
    }


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--db", type=Path, required=True, help="a database route_cost filled")
    cli.add_argument("--queries", type=Path, required=True)
    cli.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    cli.add_argument("--clients", type=int, default=16)
    cli.add_argument("--seconds", type=float, default=20.0)
    cli.add_argument("--rounds", type=int, default=3)
    add_json(cli)
    args = cli.parse_args(argv)
    if not args.db.exists():
        cli.error(f"no database at {args.db}: run bench.perf.route_cost first")
    report = []
    for n in args.processes:
        print(f"{n} process(es): starting ...", file=sys.stderr, flush=True)
        env = settings_env(f"sqlite:///{args.db.resolve()}", {})
        servers = [Server(ROOT, env) for _ in range(n)]
        try:
            for server in servers:  # each its own cache: warm each
                under_load(server, max(1, args.clients // n), 8, args.queries)
            for r in range(args.rounds):
                row = one_round(servers, args.clients, args.seconds, args.queries)
                print(f"  round {r + 1}: {json.dumps(row)}", file=sys.stderr, flush=True)
                report.append(row)
        finally:
            for server in servers:
                server.stop()
    write_report(report, args.json)


if __name__ == "__main__":
    main()
