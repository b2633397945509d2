"""Completeness, for `toolreach eval`: does the answer hold every tool a step needs?

Recall@k counts the share of a step's tools in its top k; a step that needs three tools and
gets two of them is still a step the agent cannot finish. So steps that need several tools
are also scored by **all@k**: 1 when every needed tool is in the top k, else 0 (k = 3, 5,
10). Steps that need one tool are scored by hit@1, where the answer's order matters most.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

KS = (3, 5, 10)
MULTI_METRICS = tuple(f"{m}@{k}" for m in ("recall", "all") for k in KS)
SINGLE_METRICS = ("hit@1",)


def all_at(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """1.0 when every relevant tool is in the top ``k``, else 0.0."""
    return float(relevant <= set(ranked[:k]))


def step_scores(ranked: Sequence[str], relevant: frozenset[str]) -> dict[str, float]:
    """A single-tool step's hit@1, or a several-tool step's recall@k and all@k."""
    if len(relevant) == 1:
        return {"hit@1": float(bool(ranked) and ranked[0] in relevant)}
    scores = {f"recall@{k}": len(relevant.intersection(ranked[:k])) / len(relevant) for k in KS}
    scores.update({f"all@{k}": all_at(ranked, relevant, k) for k in KS})
    return scores


def completeness(rows: Iterable[dict[str, float]]) -> dict[str, Any]:
    """The means of ``step_scores`` rows: ``single`` (hit@1) and ``multi`` (recall@k,
    all@k), each with its number of steps."""
    rows = list(rows)
    single = [r for r in rows if "hit@1" in r]
    multi = [r for r in rows if "all@3" in r]
    return {
        "single": _means(single, SINGLE_METRICS),
        "multi": _means(multi, MULTI_METRICS),
    }


def _means(rows: list[dict[str, float]], metrics: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"steps": len(rows)}
    out.update(
        {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else None for m in metrics}
    )
    return out


def format_completeness(report: dict[str, dict[str, Any]]) -> list[str]:
    """The table lines: per variant, single-tool hit@1 and several-tool recall@k, all@k."""
    first = next(iter(report.values()))
    lines = [
        f"completeness: {first['single']['steps']} steps that need one tool, "
        f"{first['multi']['steps']} that need several",
        f"{'variant':<16}{'hit@1':>8}" + "".join(f"{m:>11}" for m in MULTI_METRICS),
    ]
    for variant, values in report.items():
        cells = [values["single"]["hit@1"], *(values["multi"][m] for m in MULTI_METRICS)]
        lines.append(
            f"{variant:<16}"
            + "".join(
                f"{'-' if v is None else f'{v:.3f}':>{8 if i == 0 else 11}}"
                for i, v in enumerate(cells)
            )
        )
    return lines
