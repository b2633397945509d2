"""Parsing a bulk import, and the metaschema check inside it, timed side by side.

Parses ``--cards`` synthetic cards (bench.registries') from their JSON as the admin API's bulk
import does (``parse_batch``: pydantic, the card checks, each schema's bounds and metaschema),
then times the metaschema check of their parameter schemas alone, interleaved per schema,
with Python's ``jsonschema`` and with the compiled jsonschema-rs metaschema the registry uses:

    .venv/bin/python -m bench.perf.parse_bench --cards 3000
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence

from jsonschema import Draft202012Validator

from app.tools.catalog import parse_batch
from bench.common import parser
from bench.registries import synthetic_card
from registry.json_schema import _FAST_META


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--cards", type=int, default=3000)
    args = cli.parse_args(argv)
    rng = random.Random(args.cards)
    items = [synthetic_card(i, rng).model_dump(mode="json") for i in range(args.cards)]
    started = time.perf_counter()
    batch = parse_batch(items, None)
    parse = time.perf_counter() - started
    assert not batch.rejects, batch.rejects[:3]
    fast = _FAST_META[Draft202012Validator]
    python_s, rust_s = [], []
    for item in items:
        schema = item["parameters"]
        started = time.perf_counter()
        Draft202012Validator.check_schema(schema, format_checker=None)
        python_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        assert fast.is_valid(schema)
        rust_s.append(time.perf_counter() - started)
    per_card = parse / args.cards * 1e3
    print(f"parse_batch: {args.cards} cards in {parse:.2f} s ({per_card:.3f} ms a card)")
    print(
        "metaschema check of one card's parameters, median: "
        f"jsonschema {statistics.median(python_s) * 1e3:.3f} ms, "
        f"jsonschema-rs {statistics.median(rust_s) * 1e3:.4f} ms"
    )


if __name__ == "__main__":
    main()
