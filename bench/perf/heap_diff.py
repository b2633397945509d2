"""What grew between two tracemalloc snapshots (bench/perf/heap_hook/sitecustomize.py), by
line and by traceback, largest first.

    python -m bench.perf.heap_diff EARLY.snap LATE.snap [--top 25] [--traceback]
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence

from bench.common import parser


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("early")
    cli.add_argument("late")
    cli.add_argument("--top", type=int, default=25)
    cli.add_argument("--traceback", action="store_true", help="group by whole traceback")
    args = cli.parse_args(argv)
    early = tracemalloc.Snapshot.load(args.early)
    late = tracemalloc.Snapshot.load(args.late)
    key = "traceback" if args.traceback else "lineno"
    total = sum(s.size for s in late.statistics("filename")) - sum(
        s.size for s in early.statistics("filename")
    )
    print(f"traced memory grew by {total / 2**20:.1f} MiB")
    for stat in late.compare_to(early, key)[: args.top]:
        where = stat.traceback.format()[-1].strip()
        print(f"{stat.size_diff / 2**20:+8.2f} MiB {stat.count_diff:+8d} blocks  {where}")
        if args.traceback:
            for line in stat.traceback.format()[:-1]:
                print("        " + line)


if __name__ == "__main__":
    main()
