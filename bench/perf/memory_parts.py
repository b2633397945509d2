"""What 100,000 tools' memory is made of: peak RSS and the bytes each part of the index holds.

    .venv/bin/python -m bench.perf.memory_parts            # quick: 10,000 tools
    .venv/bin/python -m bench.perf.memory_parts --full     # 100,000 tools
        [--dim 384|896] [--routes 200]

Synthetic cards (bench.registries; one example each), stored with random unit vectors of
``--dim`` dimensions under the fake (hash) encoder's name, which also embeds the queries
(384: MiniLM's size; 896: the default MiniLM + USE mix, what the 1.3 GiB figure ran with).
The database is written by a child process, so the measured process only loads it: import,
``build_services`` (the server's start-up load), the card examples' votes (``ExampleCache``),
then ``--routes`` routes. Each part's bytes are counted by walking its objects (numpy arrays
by ``nbytes``, Python objects by ``sys.getsizeof``; an object shared by two parts counts in
the first); "other" is the peak RSS (VmHWM) minus the process before the load and the parts;
"other_live" the same from the RSS after the routes, a ``gc.collect`` and ``malloc_trim``
(what is still held, not transient or free heap).
Prints JSON.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from app.embedding.encoders import FakeEncoder
from bench.common import QUERIES, ROOT, parser, peak_memory_mb, rss_mib
from bench.registries import fill_database

MIB = 1024 * 1024


def deep_bytes(root: Any, seen: set[int]) -> int:
    """Bytes held by ``root`` and what it reaches (not counted in ``seen`` before)."""
    total, stack = 0, [root]
    while stack:
        obj = stack.pop()
        if (
            id(obj) in seen
            or isinstance(obj, type)
            or (callable(obj) and not hasattr(obj, "__dict__"))
        ):
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            base = obj
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) not in seen or base is obj:
                seen.add(id(base))
                total += base.nbytes + sys.getsizeof(obj) - (obj.nbytes if obj.base is None else 0)
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, (str, bytes, int, float, bool, type(None))):
            continue
        if isinstance(obj, (dict, MappingProxyType)):  # not a Mapping that decodes on read
            for key, value in obj.items():
                stack += [key, value]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        if hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack.append(vars(obj))
        for slot in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, slot):
                stack.append(getattr(obj, slot))
    return total


def measure(url: str, dim: int, routes: int) -> dict[str, Any]:
    import app.route.service as routes_service
    from app.schemas import RouteRequest
    from app.services import build_services
    from app.settings import Settings

    gc.collect()
    before = rss_mib()
    settings = Settings(_env_file=None, database_url=url)
    services = build_services(settings, FakeEncoder(dim))
    after_load, peak_load = rss_mib(), peak_memory_mb()
    examples, memory = services.examples, services.memory
    examples.refresh()
    after_examples, peak_examples = rss_mib(), peak_memory_mb()
    for i in range(routes):
        request = RouteRequest(query=QUERIES[i % len(QUERIES)], k=3)
        routes_service.route_step(request, services.routing)
    peak = peak_memory_mb()
    after_routes = rss_mib()
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed heap handed back: what stays is live
    trimmed = rss_mib()
    snapshot = services.index.get("default")
    assert snapshot is not None
    index = snapshot.index
    seen: set[int] = set()
    parts: dict[str, int] = {
        "tool matrix float32": deep_bytes(index.embeddings, seen),
        "int8 copy (cosine product)": deep_bytes(services.cosines._int8, seen),
        "BM25 (keyword index)": deep_bytes(index.keyword, seen),
        "parameter rules": deep_bytes(index.rules, seen),
        "names, positions, tags, pins": deep_bytes(
            (index.names, index.positions, index.tags, index.pinned, index.cjk_share), seen
        ),
        "cards (CardStore)": deep_bytes(snapshot.cards._raw, seen),
        "summaries": deep_bytes(snapshot.summaries, seen),
        "snapshot's memo (derived: votes' alignment, ...)": deep_bytes(snapshot.memo, seen),
        "rest of the snapshot": deep_bytes(snapshot, seen),
        "examples' votes (QueryMemory)": deep_bytes(
            [built[1] for built in examples._built.values()], seen
        ),
        "examples' rows by text (ExampleCache._rows)": deep_bytes(examples._rows, seen),
        "examples' pairs": deep_bytes(examples._pairs, seen),
        "cards' JSON and examples (ExampleCache)": deep_bytes(examples._cards, seen),
        "query memory": deep_bytes(memory.get("default"), seen),
    }
    mib = {name: round(value / MIB, 1) for name, value in parts.items()}
    counted = sum(mib.values())
    services.close()
    return {
        "tools": len(index),
        "dim": dim,
        "rss_before_load_mib": round(before, 1),
        "rss_after_load_mib": round(after_load, 1),
        "peak_rss_after_load_mib": round(peak_load, 1),
        "rss_after_examples_mib": round(after_examples, 1),
        "peak_rss_after_examples_mib": round(peak_examples, 1),
        "rss_after_routes_mib": round(after_routes, 1),
        "rss_after_malloc_trim_mib": round(trimmed, 1),
        "peak_rss_mib": round(peak, 1),
        "parts_mib": mib,
        "parts_sum_mib": round(counted, 1),
        "other_mib": round(peak - before - counted, 1),
        "other_live_mib": round(trimmed - before - counted, 1),
    }


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--full", action="store_true", help="100,000 tools (default 10,000)")
    cli.add_argument("--tools", type=int, default=None)
    cli.add_argument("--dim", type=int, default=384)
    cli.add_argument("--routes", type=int, default=200)
    cli.add_argument("--db", type=Path, default=None, help="reuse (or write) this SQLite file")
    cli.add_argument("--fill-only", action="store_true", help=argparse.SUPPRESS)
    args = cli.parse_args(argv)
    size = args.tools or (100_000 if args.full else 10_000)
    with tempfile.TemporaryDirectory(prefix="toolreach-parts-") as tmp:
        db = args.db or Path(tmp) / "parts.db"
        url = f"sqlite:///{db}"
        if args.fill_only:
            fill_database(url, size, FakeEncoder(args.dim), real=False)
            return
        if not db.exists():
            print(f"writing {size} synthetic cards ...", file=sys.stderr, flush=True)
            command = [sys.executable, "-m", "bench.perf.memory_parts", "--fill-only"]
            command += ["--db", str(db), "--tools", str(size), "--dim", str(args.dim)]
            subprocess.run(command, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
        print(json.dumps(measure(url, args.dim, args.routes), indent=2))


if __name__ == "__main__":
    main()
