"""How often the guard (app/learning/guard.py) promotes an adapter trained on wrong reports.

The scenario of tests/api/test_learning.py: five tools, 40 steps routed by three keys, each
reported a success of a random other tool (seeded), then ``POST /v1/learning/{ns}/train``;
one run per seed, on a SQLite file, the fake encoder. Prints each seed's verdict and the
count promoted.

    python -m bench.quality.learn_wrong_reports --seeds 20
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence

from app import migrate
from bench.common import parser
from tests.api import test_learning as scenario
from tests.conftest import ADMIN, empty_database


def verdict(url: str, seed: int, wrong: bool) -> dict[str, object]:
    empty_database(url)
    with scenario.started(url) as client:
        tools = [{"name": n, "description": d} for n, (d, _) in scenario.PHRASES.items()]
        body = {"tools": tools, "namespace": scenario.NS}
        assert client.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        scenario.report(client, wrong=wrong, seed=seed)
        return scenario.train(client)


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--seeds", type=int, default=20)
    cli.add_argument("--right", action="store_true", help="right reports instead")
    args = cli.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{scratch}/bench.db"
        migrate.upgrade(url)
        promoted = 0
        for seed in range(args.seeds):
            model = verdict(url, seed, wrong=not args.right)
            promoted += bool(model["promoted"])
            decided = "promoted" if model["promoted"] else "refused"
            print(f"seed {seed}: {decided}: {model['reason']}")
    kind = "right" if args.right else "wrong"
    print(f"{kind} reports: {promoted} of {args.seeds} challengers promoted")


if __name__ == "__main__":
    main()
