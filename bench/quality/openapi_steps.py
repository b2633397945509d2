"""Steps a user would say, routed over the cards the importer makes of an OpenAPI document.

    python bench/openapi_steps.py --openapi /work/shared/data/openapi/box-platform.openapi.json \\
        --steps tests/data/openapi_steps/box.jsonl [--supplied header:token] [--json]

The document goes through the same importer as ``toolreach source add`` (app/sources/), its
cards through the same write path and ``route`` as ``toolreach eval`` (a throw-away SQLite
registry, the configured encoder). Prints hit@1 and hit@3 and each step's top three, a miss
marked. ``tests/data/openapi_steps/*.jsonl``: ``{"query", "relevant": [names], "id"}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import anyio

from app.cli.evaluate import NAMESPACE, throwaway_services
from app.db import unit_of_work
from app.routing import route
from app.settings import load_settings
from app.sources import openapi
from app.sources.documents import file_uri, load_documents, read_file
from app.tools.catalog import parse_batch, write_cards


def cards_of(document: Path, supplied: frozenset[tuple[str, str]]) -> list[dict[str, Any]]:
    documents = anyio.run(load_documents, file_uri(document), read_file)
    options = openapi.Options(namespace=NAMESPACE, source="bench", supplied=supplied)
    converted = openapi.convert(documents, options)
    return [card.model_dump(mode="json", exclude={"source"}) for card, _ in converted.cards]


def run(document: Path, steps: Path, supplied: frozenset[tuple[str, str]]) -> dict[str, Any]:
    queries = [json.loads(line) for line in steps.read_text().splitlines() if line.strip()]
    with throwaway_services(load_settings(), None) as services:
        batch = parse_batch(cards_of(document, supplied), NAMESPACE)
        with unit_of_work(services.session_factory) as session:
            write_cards(session, services.encoder, batch.cards)
        services.index.sync()
        examples = None
        if services.examples is not None:
            services.examples.refresh()
            examples = services.examples.get(NAMESPACE)
        snapshot = services.index.get(NAMESPACE)
        assert snapshot is not None
        rows = []
        for query in queries:
            vector = services.encoder.encode([query["query"]])[0]
            ranked = route(
                snapshot.index, query["query"], vector, k=3, config=services.index.config,
                cosines=services.cosines, examples=examples,
            )  # fmt: skip
            top = [c.name for c in ranked]
            relevant = set(query["relevant"])
            rows.append({**query, "top": top, "hit@1": top[:1] != [] and top[0] in relevant,
                         "hit@3": bool(relevant & set(top))})  # fmt: skip
    return {
        "document": document.name,
        "cards": len(batch.cards),
        "steps": len(rows),
        "hit@1": sum(r["hit@1"] for r in rows),
        "hit@3": sum(r["hit@3"] for r in rows),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openapi", type=Path, required=True)
    parser.add_argument("--steps", type=Path, required=True)
    parser.add_argument("--supplied", action="append", default=[], help="header:token")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    supplied = frozenset(tuple(s.lower().split(":", 1)) for s in args.supplied)
    report = run(args.openapi, args.steps, supplied)
    if args.json:
        print(json.dumps(report, indent=1))
        return
    for row in report["rows"]:
        mark = "  " if row["hit@1"] else ("~ " if row["hit@3"] else "✗ ")
        print(f"{mark}{row['query'][:60]:60} → {', '.join(row['top'])}")
    n = report["steps"]
    print(
        f"{report['document']}: {report['cards']} cards, {n} steps: "
        f"hit@1 {report['hit@1']}/{n}, hit@3 {report['hit@3']}/{n}"
    )


if __name__ == "__main__":
    main()
