"""A replica's RSS under single-card writes, in one process (the soak's memory question).

Imports Seal-Tools' tools with the fake encoder (896 dimensions, as the real one) into a
scratch Postgres database, then sends ``WRITES`` writes through the app in turn: a POST of a
new card, a PUT of one written before (bench.perf.soak's writes), and prints the RSS every 200
writes. ``--trace``: tracemalloc's largest live growths at the end (what Python and numpy
still hold). Without a setting it runs on glibc's dynamic threshold; ``MALLOC_MMAP_THRESHOLD_``
fixes it as ``TOOLREACH_MALLOC_MMAP_THRESHOLD`` does in ``toolreach serve`` (4 MiB by
default; 128 KiB before 2026-12-01):

    PYTHONPATH=. .venv/bin/python -m bench.perf.write_rss 1000
    MALLOC_MMAP_THRESHOLD_=4194304 PYTHONPATH=. .venv/bin/python -m bench.perf.write_rss 2000
    MALLOC_MMAP_THRESHOLD_=131072 PYTHONPATH=. .venv/bin/python -m bench.perf.write_rss 2000
"""

from __future__ import annotations

import gc
import json
import os
import random
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app import migrate
from app.embedding.encoders import FakeEncoder
from app.main import create_app
from bench.common import parser, rss_mib
from bench.servers import scratch_database
from tests.conftest import ADMIN, make_settings

DATA = Path("/work/shared/data/seal-tools/tools.jsonl")


def write(
    client: TestClient, w: int, cards: list[dict[str, Any]], written: list[dict[str, Any]]
) -> None:
    """The ``w``-th write: a PUT of a card written before (even ``w``), else a POST."""
    if w % 2 == 0 and written:
        card = random.Random(w).choice(written)
        changed = {**card, "description": f"{card['description']} Revised {w}."}
        client.put(f"/v1/tools/{card['name']}", json=changed, headers=ADMIN)
        return
    base_card = cards[w % len(cards)]
    new = re.sub(r"[^A-Za-z0-9_.:-]", "_", f"soak_{w}_{base_card['name']}")[:64]
    card = {**base_card, "name": new}
    if client.post("/v1/tools", json=card, headers=ADMIN).status_code == 201:
        written.append(card)


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("writes", type=int, nargs="?", default=1000)
    cli.add_argument("--trace", action="store_true", help="tracemalloc's largest growths")
    args = cli.parse_args(argv)
    writes, trace = args.writes, args.trace
    cards = [json.loads(line) for line in DATA.open()]
    with scratch_database("toolreach_rss") as url:
        migrate.upgrade(url)
        env = {**os.environ, "TOOLREACH_DATABASE_URL": url, "TOOLREACH_ENCODER": "fake"}
        toolreach = Path(sys.executable).parent / "toolreach"
        command = [str(toolreach), "import", str(DATA), "--skip-invalid"]
        subprocess.run(command, env=env, check=True, capture_output=True)
        app = create_app(make_settings(url), encoder=FakeEncoder(896))
        with TestClient(app, raise_server_exceptions=False) as client:
            gc.collect()
            if trace:
                tracemalloc.start(25)
                base = tracemalloc.take_snapshot()
            start, began = rss_mib(), time.perf_counter()
            written: list[dict[str, Any]] = []
            print(f"loaded: RSS {start:.0f} MiB", flush=True)
            for w in range(1, writes + 1):
                write(client, w, cards, written)
                if w % 200 == 0:
                    now = rss_mib()
                    took = time.perf_counter() - began
                    print(f"writes {w}: RSS {now:.0f} MiB ({now - start:+.0f}), {took:.0f} s")
            if trace:
                gc.collect()
                for stat in tracemalloc.take_snapshot().compare_to(base, "traceback")[:10]:
                    print(f"{stat.size_diff / 1024:.0f} KiB in {stat.count_diff} blocks")
                    for line in stat.traceback.format()[-6:]:
                        print("   ", line)


if __name__ == "__main__":
    main()
