"""What grew between two tracemalloc snapshots (bench/heap_hook/sitecustomize.py), by line
and by traceback, largest first.

    python bench/heap_diff.py EARLY.snap LATE.snap [--top 25] [--traceback]
"""

from __future__ import annotations

import argparse
import tracemalloc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("early")
    parser.add_argument("late")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--traceback", action="store_true", help="group by whole traceback")
    args = parser.parse_args()
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
