"""How the parts of a step (app/routing/parts.py) compare with the asks the router cut
before them (``segment.py``, read from a checkout that still has it): per dataset, how many
steps are read as several now and were one ask, are read as more or fewer pieces, and —
what must be none for the route-answer regression — were several asks and are one part.

    python bench/parts_vs_asks.py --asks /work/main/app/routing/segment.py DIR [DIR ...]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.routing import step_parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--asks", type=Path, required=True, help="the old segment.py")
    parser.add_argument("data", type=Path, nargs="+")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("old_segment", args.asks)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    for data in args.data:
        lines = (data / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        counts: collections.Counter[tuple[str, str]] = collections.Counter()
        for item in (json.loads(line) for line in lines if line.strip()):
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
