"""One host's throughput as one server process or as several replicas on the same cores.

A route's ranking holds the interpreter lock, so on repeated steps (the embedding cache
answers the model's part) one `toolreach serve` uses about one core whatever the core count.
This starts ``--processes`` servers of this checkout on the catalog a run of
bench/route_cost.py filled (all reading the one SQLite file; writes are not part of the
run), warms each one's cache, then drives ``--clients`` load clients split evenly across
them for ``--rounds`` rounds, all of it on the machine's own cores, and prints per round the
summed routes/s, the worst p99 and the servers' CPU per route:

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python bench/route_cost.py --full --distinct 200 \\
        --workdir /tmp/rc
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python bench/replica_cost.py \\
        --db /tmp/rc/cost-….db --queries /tmp/rc/steps.txt --processes 1 2

``--queries``: one step a line (route_cost.py's ``steps.txt`` holds the steps it sent last).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.route_bench import cpu_seconds
from bench.route_cost import KEY, ROOT, Server, load, under_load


def one_round(servers: list[Server], clients: int, seconds: float, queries: Path) -> dict[str, Any]:
    before = [cpu_seconds(s.proc.pid) for s in servers]
    load_before = load()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "bench" / "load_client.py"),
                str(s.port),
                "--clients",
                str(clients // len(servers)),
                "--seconds",
                str(seconds),
                "--bearer",
                KEY,
                "--queries",
                str(queries),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for s in servers
    ]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="a database route_cost.py filled")
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.db.exists():
        parser.error(f"no database at {args.db}: run bench/route_cost.py first")
    report = []
    for n in args.processes:
        print(f"{n} process(es): starting ...", file=sys.stderr, flush=True)
        servers = [Server(ROOT, f"sqlite:///{args.db.resolve()}", {}) for _ in range(n)]
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
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
