"""A step's covering answer, as ``POST /v1/route`` gives it, against a dataset's cards (the
service's default encoder, an in-process service on a temporary SQLite file).

    python bench/cover_example.py --data tests/data/compound [--k 3] "step" ["step" ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.main import create_app
from app.settings import Settings
from bench.route_answers import HEADERS, KEY, NAMESPACE, read_jsonl, register, settle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("steps", nargs="+")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=f"sqlite:///{scratch}/example.db", admin_keys=(KEY,)
        )
        with TestClient(create_app(settings)) as client:
            register(client, read_jsonl(args.data / "tools.jsonl"))
            settle(client)
            for step in args.steps:
                body = {"query": step, "k": args.k, "namespace": NAMESPACE}
                answer = client.post("/v1/route", json=body, headers=HEADERS).json()
                shown = [
                    {key: c[key] for key in ("name", "part", "confidence") if key in c}
                    for c in answer["candidates"]
                ]
                print(
                    json.dumps(
                        {"parts": answer.get("parts"), "candidates": shown}, ensure_ascii=False
                    )
                )


if __name__ == "__main__":
    main()
