"""How the parts of a step (app/routing/parts.py) compare with the asks the router cut
before them (``segment.py``, read from a checkout that still has it): per dataset, how many
steps are read as several now and were one ask, are read as more or fewer pieces, and —
what must be none for the route-answer regression — were several asks and are one part.

    git show 4217b63~1:app/routing/segment.py > /tmp/segment.py
    python -m bench.quality.parts_vs_asks --asks /tmp/segment.py DIR [DIR ...]
"""

from __future__ import annotations

import collections
import importlib.util
from collections.abc import Sequence
from pathlib import Path

from app.routing import step_parts
from bench.common import parser, read_jsonl


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--asks", type=Path, required=True, help="the old segment.py")
    cli.add_argument("data", type=Path, nargs="+")
    args = cli.parse_args(argv)
    spec = importlib.util.spec_from_file_location("old_segment", args.asks)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    for data in args.data:
        counts: collections.Counter[tuple[str, str]] = collections.Counter()
        for item in read_jsonl(data / "queries.jsonl"):
            asks, parts = len(old.query_segments(item["query"])), len(step_parts(item["query"]))
            need = "one tool" if len(item["relevant"]) == 1 else "several"
            if asks > 1 and parts == 1:
                change = "several asks, one part"
            elif asks == 1 and parts > 1:
                change = "one ask, several parts"
            else:
                change = "more" if parts > asks else "fewer" if parts < asks else "same"
            counts[(need, change)] += 1
        print(f"{data.name}: " + ", ".join(f"{n} {c}: {v}" for (n, c), v in sorted(counts.items())))


if __name__ == "__main__":
    main()
