"""A step's covering answer, as ``POST /v1/route`` gives it, against a dataset's cards (the
service's default encoder, an in-process service on a temporary SQLite file).

    python -m bench.quality.cover_example --data tests/data/compound [--k 3] "step" ["step" ...]
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from bench.common import add_data, parser, read_jsonl
from bench.quality.route_answers import HEADERS, KEY, NAMESPACE, register, settle


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    add_data(cli)
    cli.add_argument("--k", type=int, default=3)
    cli.add_argument("steps", nargs="+")
    args = cli.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(
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
