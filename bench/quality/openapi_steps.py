"""Steps a user would say, routed over the cards the importer makes of real API descriptions
and MCP servers as they ship; beside them, the plain hybrid gateways ship, on the same cards.

    python -m bench.quality.openapi_steps --all [--only box,github_mcp] [--json FILE]
    python -m bench.quality.openapi_steps \\
        --openapi /work/shared/data/openapi/box-platform.openapi.json \\
        --steps tests/data/openapi_steps/box.jsonl [--supplied header:token] [--json]

``--all``: every API of ``APIS`` (the five documents in /work/shared/data/openapi, two MCP
servers from npm that ``make install`` puts in .npm-tools), each imported as shipped with the
code ``toolreach source add`` runs (app/sources/: documents read and converted; an MCP server
over stdio, listed), its cards written through the same write path and ranked by the same
``route`` call as ``toolreach eval`` (app/cli/evaluate.py: a throw-away SQLite registry, the
configured encoder, the steps' rows as eval encodes them). Its steps are
``tests/data/real_apis/<api>.jsonl`` and ``<api>_heldout.jsonl`` (README there). Per API:
import seconds (read and convert, or connect and list), cards, refusals, and the right tool
first and in the top 3 over all steps and over the held-out ones alone, for ToolReach and for
``baseline``: BM25 (bm25s) over "name summary description" and all-MiniLM-L6-v2's cosine over
"name: description", each min-max scaled over the API's cards, fused 50/50.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from app.cli.evaluate import NAMESPACE, _encode_queries, throwaway_services
from app.db import unit_of_work
from app.embedding.encoders import Encoder, make_encoder
from app.routing import RouteOptions
from app.services import Services
from app.settings import load_settings
from app.sources import mcp, openapi
from app.sources.documents import file_uri, load_documents, read_file
from app.sources.schemas import SourceConfig
from app.tools.catalog import parse_batch, write_cards
from bench.common import ROOT

OPENAPI = Path("/work/shared/data/openapi")
NPM = ROOT / ".npm-tools" / "node_modules" / "@modelcontextprotocol"
STEPS = ROOT / "tests" / "data" / "real_apis"
TOKEN = frozenset({("header", "token")})
# api → ("openapi", file, credentials' parameters) or ("mcp", server's script, its arguments)
APIS: dict[str, tuple[str, Any, Any]] = {
    "box": ("openapi", OPENAPI / "box-platform.openapi.json", frozenset()),
    "slack": ("openapi", OPENAPI / "slack-web.swagger.json", TOKEN),
    "openai": ("openapi", OPENAPI / "openai.openapi.json", frozenset()),
    "twilio_conversations": ("openapi", OPENAPI / "twilio-conversations-v1.json", frozenset()),
    "twilio_messaging": ("openapi", OPENAPI / "twilio-messaging-v1.json", frozenset()),
    "github_mcp": ("mcp", NPM / "server-github" / "dist" / "index.js", ()),
    "filesystem_mcp": ("mcp", NPM / "server-filesystem" / "dist" / "index.js", ("{tmp}",)),
}
Card = dict[str, Any]
Ranker = Callable[[list[str]], list[list[str]]]


def cards_of(
    document: Path, supplied: frozenset[tuple[str, str]], namespace: str = NAMESPACE
) -> list[Card]:
    """The document's cards, as ``toolreach source add`` reads and converts it."""
    return imported_document(document, supplied, namespace)[0]


def imported_document(
    document: Path, supplied: frozenset[tuple[str, str]], namespace: str
) -> tuple[list[Card], int]:
    """(its cards, the operations refused)."""
    documents = anyio.run(load_documents, file_uri(document), read_file)
    options = openapi.Options(namespace=namespace, source="bench", supplied=supplied)
    converted = openapi.convert(documents, options)
    cards = [card.model_dump(mode="json", exclude={"source"}) for card, _ in converted.cards]
    return cards, len(converted.refused)


def imported_server(script: Path, args: Sequence[str], namespace: str) -> tuple[list[Card], int]:
    """(an npm MCP server's cards, the tools refused): run over stdio, listed, converted as
    a stdio source is (app/sources/mcp.py)."""
    if shutil.which("node") is None or not script.is_file():
        raise SystemExit(f"{script} is missing: run `make install` (node and .npm-tools)")
    with tempfile.TemporaryDirectory(prefix="steps-mcp-") as tmp:
        command = ["node", str(script), *(a.replace("{tmp}", tmp) for a in args)]
        env = {"GITHUB_PERSONAL_ACCESS_TOKEN": "unused-for-listing"}
        config = SourceConfig.model_validate({"command": command, "env": env})
        reach = mcp.Reach(rules=None, secret_dirs=(), timeout=60, stdio_allowed=True)  # type: ignore[arg-type]
        tools = anyio.run(_listed, config, reach)
    listed = mcp.to_cards(tools, source="bench", namespace=namespace, prefix="")
    cards = [card.model_dump(mode="json", exclude={"source"}) for card, _ in listed.cards]
    return cards, len(listed.refused)


async def _listed(config: SourceConfig, reach: mcp.Reach) -> list[Any]:
    async with mcp.connect(config, reach) as connected:
        return await mcp.list_all_tools(connected.session, reach)


def read_steps(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def service_ranker(services: Services, cards: list[Card], namespace: str) -> Ranker:
    """The steps' top names by the service's route (its router and the namespace's view,
    as ``POST /v1/route`` ranks them), on the cards written to ``namespace``."""
    batch = parse_batch(cards, namespace)
    with unit_of_work(services.session_factory) as session:
        write_cards(session, services.encoder, batch.cards)
    services.index.sync()
    services.examples.refresh()
    current = services.routing.views.get(namespace)
    assert current is not None
    router = services.routing.router

    def ranked(texts: list[str]) -> list[list[str]]:
        vectors = _encode_queries(services.encoder, texts)
        tops = []
        for text, vector in zip(texts, vectors, strict=True):
            found = router.route(current.view, text, vector, RouteOptions(k=10))
            tops.append([c.name for c in found])
        return tops

    return ranked


def baseline_ranker(minilm: Encoder, cards: list[Card]) -> Ranker:
    """BM25 over "name summary description" and MiniLM over "name: description", each
    min-max scaled over the cards, fused 50/50: the hybrid gateways ship."""
    import bm25s

    names = [c["name"] for c in cards]
    corpus = [f"{c['name']} {c.get('summary') or ''} {c['description']}" for c in cards]
    bm25 = bm25s.BM25()
    bm25.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    docs = _unit(minilm.encode([f"{c['name']}: {c['description']}" for c in cards]))

    def ranked(texts: list[str]) -> list[list[str]]:
        cosines = _unit(minilm.encode(texts)) @ docs.T
        rows = []
        for text, cosine in zip(texts, cosines, strict=True):
            words = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)
            fused = 0.5 * _minmax(bm25.get_scores(words[0])) + 0.5 * _minmax(cosine)
            rows.append([names[i] for i in np.argsort(-fused, kind="stable")[:10]])
        return rows

    return ranked


def _unit(rows: Any) -> np.ndarray:
    array = np.asarray(rows, dtype=np.float32)
    return array / np.maximum(np.linalg.norm(array, axis=1, keepdims=True), 1e-12)


def _minmax(scores: Any) -> np.ndarray:
    array = np.asarray(scores, dtype=np.float64)
    spread = array.max() - array.min() if array.size else 0.0
    return (array - array.min()) / spread if spread > 0 else np.zeros_like(array)


def scored(steps: list[dict[str, Any]], tops: list[list[str]]) -> list[dict[str, Any]]:
    rows = []
    for step, top in zip(steps, tops, strict=True):
        relevant = set(step["relevant"])
        hit1, hit3 = bool(top) and top[0] in relevant, bool(relevant & set(top[:3]))
        rows.append({**step, "top": top[:3], "hit@1": hit1, "hit@3": hit3})
    return rows


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {"steps": len(rows), "hit@1": sum(r["hit@1"] for r in rows),
            "hit@3": sum(r["hit@3"] for r in rows)}  # fmt: skip


def run(document: Path, steps: Path, supplied: frozenset[tuple[str, str]]) -> dict[str, Any]:
    """One document's steps routed by the service (tests/sources/test_openapi_steps.py)."""
    queries = read_steps(steps)
    with throwaway_services(load_settings(), None) as services:
        cards = cards_of(document, supplied)
        rows = scored(
            queries, service_ranker(services, cards, NAMESPACE)([q["query"] for q in queries])
        )
    return {"document": document.name, "cards": len(cards), **counts(rows), "rows": rows}


def run_api(services: Services, minilm: Encoder, api: str) -> dict[str, Any]:
    """One API of ``APIS``: imported as shipped, its steps and held-out steps routed by the
    service and by the baseline."""
    kind, source, extra = APIS[api]
    namespace = api.replace("_", "-")
    started = time.perf_counter()
    if kind == "openapi":
        cards, refused = imported_document(source, extra, namespace)
    else:
        cards, refused = imported_server(source, extra, namespace)
    seconds = time.perf_counter() - started
    tuning, heldout = read_steps(STEPS / f"{api}.jsonl"), read_steps(STEPS / f"{api}_heldout.jsonl")
    steps = tuning + heldout
    texts = [s["query"] for s in steps]
    report: dict[str, Any] = {"api": api, "import_seconds": round(seconds, 2),
                              "cards": len(cards), "refused": refused}  # fmt: skip
    for router, ranker in (
        ("toolreach", service_ranker(services, cards, namespace)),
        ("baseline", baseline_ranker(minilm, cards)),
    ):
        rows = scored(steps, ranker(texts))
        report[router] = {"all": counts(rows), "heldout": counts(rows[len(tuning) :])}
        languages = sorted({r["lang"] for r in rows})
        report[router]["by_lang"] = {
            lang: counts([r for r in rows if r["lang"] == lang]) for lang in languages
        }
        # Only the tuning steps are kept one by one: the held-out ones are only counted.
        report[router]["rows"] = rows[: len(tuning)]
    return report


def run_all(apis: Sequence[str]) -> list[dict[str, Any]]:
    minilm = make_encoder("minilm")
    with throwaway_services(load_settings(), None) as services:
        return [run_api(services, minilm, api) for api in apis]


def table(reports: list[dict[str, Any]]) -> str:
    """The per-API table (markdown), with the totals."""
    head = ("| API | import s | cards | refused | steps | ToolReach first | top 3 | held-out "
            "first | top 3 | hybrid first | top 3 | held-out first | top 3 |")  # fmt: skip
    lines = [head, "|" + "---|" * 13]
    total = {k: 0 for k in ("n", "h", "t1", "t3", "ht1", "ht3", "b1", "b3", "hb1", "hb3")}
    for r in reports:
        t, b = r["toolreach"], r["baseline"]
        n, h = t["all"]["steps"], t["heldout"]["steps"]
        cells = [
            *(t[part][hit] for part in ("all", "heldout") for hit in ("hit@1", "hit@3")),
            *(b[part][hit] for part in ("all", "heldout") for hit in ("hit@1", "hit@3")),
        ]
        for key, value in zip(
            ("t1", "t3", "ht1", "ht3", "b1", "b3", "hb1", "hb3"), cells, strict=True
        ):
            total[key] += value
        total["n"], total["h"] = total["n"] + n, total["h"] + h
        shown = [f"{v}/{n if i % 4 < 2 else h}" for i, v in enumerate(cells)]
        lines.append(f"| {r['api']} | {r['import_seconds']} | {r['cards']} | {r['refused']} | "
                     f"{n} | " + " | ".join(shown) + " |")  # fmt: skip
    n, h = total["n"], total["h"]
    share = [total[k] / (n if i % 4 < 2 else h) for i, k in
             enumerate(("t1", "t3", "ht1", "ht3", "b1", "b3", "hb1", "hb3"))]  # fmt: skip
    lines.append(f"| **all** | | | | {n} | " + " | ".join(f"{s:.3f}" for s in share) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="every API of APIS (--only a,b)")
    parser.add_argument("--only", default="", help="comma-separated APIs, with --all")
    parser.add_argument("--openapi", type=Path)
    parser.add_argument("--steps", type=Path)
    parser.add_argument("--supplied", action="append", default=[], help="header:token")
    parser.add_argument("--json", nargs="?", const="-", help="write the report as JSON (FILE)")
    args = parser.parse_args()
    if args.all:
        reports = run_all([a for a in args.only.split(",") if a] or list(APIS))
        if args.json:
            _write_json(reports, args.json)
        print(table(reports))
        return
    if args.openapi is None or args.steps is None:
        parser.error("--all, or --openapi and --steps")
    supplied = frozenset(tuple(s.lower().split(":", 1)) for s in args.supplied)
    report = run(args.openapi, args.steps, supplied)
    if args.json:
        _write_json(report, args.json)
        return
    for row in report["rows"]:
        mark = "  " if row["hit@1"] else ("~ " if row["hit@3"] else "✗ ")
        print(f"{mark}{row['query'][:60]:60} → {', '.join(row['top'])}")
    n = report["steps"]
    print(f"{report['document']}: {report['cards']} cards, {n} steps: "
          f"hit@1 {report['hit@1']}/{n}, hit@3 {report['hit@3']}/{n}")  # fmt: skip


def _write_json(report: Any, where: str) -> None:
    text = json.dumps(report, indent=1, ensure_ascii=False)
    if where == "-":
        print(text)
    else:
        Path(where).write_text(text + "\n")


if __name__ == "__main__":
    main()
