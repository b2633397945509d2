"""A replica's RSS under single-card writes, in one process (the soak's memory question).

Imports Seal-Tools' tools with the fake encoder (896 dimensions, as the real one) into a
scratch Postgres database, then sends ``WRITES`` writes through the app in turn: a POST of a
new card, a PUT of one written before (bench/soak.py's writes), and prints the RSS every 200
writes. ``--trace``: tracemalloc's largest live growths at the end (what Python and numpy
still hold). Without a setting it runs on glibc's dynamic threshold; ``MALLOC_MMAP_THRESHOLD_``
fixes it as ``TOOLREACH_MALLOC_MMAP_THRESHOLD`` does in ``toolreach serve`` (4 MiB by
default; 128 KiB before 2026-12-01):

    PYTHONPATH=. .venv/bin/python bench/write_rss.py 1000
    MALLOC_MMAP_THRESHOLD_=4194304 PYTHONPATH=. .venv/bin/python bench/write_rss.py 2000
    MALLOC_MMAP_THRESHOLD_=131072 PYTHONPATH=. .venv/bin/python bench/write_rss.py 2000
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
import uuid
from pathlib import Path

import psycopg
from fastapi.testclient import TestClient

from app import migrate
from app.embedding.encoders import FakeEncoder
from app.main import create_app
from tests.conftest import ADMIN, PG_ADMIN_URL, make_settings

DATA = Path("/work/shared/data/seal-tools/tools.jsonl")


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


def main() -> None:
    writes = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1000
    trace = "--trace" in sys.argv
    cards = [json.loads(line) for line in DATA.open()]
    name = f"toolreach_rss_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
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
            start, began, written = rss_mib(), time.perf_counter(), []
            print(f"loaded: RSS {start:.0f} MiB", flush=True)
            for w in range(1, writes + 1):
                if w % 2 == 0 and written:
                    card = random.Random(w).choice(written)
                    changed = {**card, "description": f"{card['description']} Revised {w}."}
                    client.put(f"/v1/tools/{card['name']}", json=changed, headers=ADMIN)
                else:
                    base_card = cards[w % len(cards)]
                    new = re.sub(r"[^A-Za-z0-9_.:-]", "_", f"soak_{w}_{base_card['name']}")[:64]
                    card = {**base_card, "name": new}
                    if client.post("/v1/tools", json=card, headers=ADMIN).status_code == 201:
                        written.append(card)
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
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
