"""The card doctor, measured (issue 31): hit@1 before and after applying every advice the
replay offers, on a namespace's reported steps, unseen paraphrases of them, and steps that
were right, with the real model.

    PYTHONPATH=. HF_HUB_OFFLINE=1 python -m bench.quality.advice_eval [--data DIR] \\
        [--encoder minilm]

(DIR: tests/data/doctor by default.)

DATA holds tools.json, reported.jsonl (the reported steps, ``{query, chosen}``),
paraphrases.jsonl and right.jsonl (never reported).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.advice.finding import Case
from app.advice.replay import firsts, heal
from app.embedding.encoders import Encoder, make_encoder
from app.routing import RouterConfig, RouterIndex, embedding_text
from app.tools.catalog import card_to_doc
from bench.common import parser, read_jsonl
from registry.card import ToolCard


def rows(data: Path, name: str) -> list[dict[str, str]]:
    return read_jsonl(data / f"{name}.jsonl")


def hit1(index: RouterIndex, encoder: Encoder, items: list[dict[str, str]]) -> list[bool]:
    got = firsts(index, encoder, [r["query"] for r in items])
    return [g == r["chosen"] for g, r in zip(got, items, strict=True)]


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--data", default="tests/data/doctor")
    cli.add_argument("--encoder", default="minilm")
    args = cli.parse_args(argv)
    data, encoder = Path(args.data), make_encoder(args.encoder)
    cards = {c["name"]: ToolCard(**c) for c in json.loads((data / "tools.json").read_text())}
    docs = [card_to_doc(cards[n]) for n in sorted(cards)]
    index = RouterIndex.build(
        docs, encoder.encode([embedding_text(d) for d in docs]), RouterConfig()
    )
    sets = {name: rows(data, name) for name in ("reported", "paraphrases", "right")}
    before = {name: hit1(index, encoder, items) for name, items in sets.items()}
    started = time.perf_counter()
    cases = [Case(r["query"], "", r["chosen"]) for r in sets["reported"]]
    healed, _, applied, refused = heal(index, cards, encoder, cases)
    seconds = time.perf_counter() - started
    after = {name: hit1(healed, encoder, items) for name, items in sets.items()}
    report: dict[str, dict[str, Any]] = {
        name: {
            "n": len(items),
            "hit1_before": sum(before[name]),
            "hit1_after": sum(after[name]),
            "fixed": sum(not b and a for b, a in zip(before[name], after[name], strict=True)),
            "broken": sum(b and not a for b, a in zip(before[name], after[name], strict=True)),
        }
        for name, items in sets.items()
    }
    report["advice"] = {
        "applied": len(applied),
        "refused_last_pass": refused,
        "changes": [[c.tool, c.field] for f in applied for c in f.changes],
        "seconds": round(seconds, 1),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
