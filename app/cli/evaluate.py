"""`toolreach eval`: route a labelled dataset through a throw-away registry and score it.

The dataset format is that of the public benchmarks (MetaTool, Seal-Tools): ``tools.jsonl``
(name, description, parameters) and ``queries.jsonl`` (query, relevant tool names). The tools
go through the same write path as the admin API (parse, check, embed, store) into a temporary
SQLite file, the index is loaded from it as the service loads it, and each query is ranked by
the same ``route`` call as ``POST /v1/route`` — once for the full pipeline and once per
ablation, and once more with the step read as one part (``one_part``: ``split: false``).
Each variant is also scored for completeness (``completeness.py``): all@k and recall@k of the
steps that need several tools, hit@1 of those that need one. The full pipeline's top
confidence is then measured (``no_fit.py``): its calibration, and how it separates these
queries from the same ones asked of the namespace without their labelled tools.
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.cli.completeness import completeness, format_completeness, step_scores
from app.cli.jsonl import JsonlError, read_lines
from app.cli.no_fit import (
    NO_FIT_SAMPLE,
    Asked,
    asked_without,
    confidence_report,
    format_confidence,
    sample,
    top_of,
)
from app.cli.progress import progress_bar, progress_iter
from app.db import unit_of_work
from app.embedding.encoders import Encoder
from app.routing import NamespaceView, RouteOptions, Router, query_texts
from app.routing.confidence_fit import RECOMMENDED_MIN_CONFIDENCE
from app.routing.index import doc_tokens
from app.services import Services, build_services
from app.settings import Settings
from app.tools.catalog import ParsedBatch, card_to_doc, parse_batch, write_cards
from app.tools.live_index import Snapshot
from registry.formats import json_kind

NAMESPACE = "eval"
VARIANTS: dict[str, frozenset[str]] = {
    "full": frozenset({"keyword", "embedding", "prior", "penalty"}),
    "keyword_only": frozenset({"keyword", "prior", "penalty"}),
    "embedding_only": frozenset({"embedding", "prior", "penalty"}),
    "no_prior": frozenset({"keyword", "embedding", "penalty"}),
    "no_penalty": frozenset({"keyword", "embedding", "prior"}),
    "one_part": frozenset({"keyword", "embedding", "prior", "penalty"}),  # split: false
}
METRICS = ("hit@1", "recall@3", "recall@5", "ndcg@10")
SHOWN_REJECTIONS = 10  # rejected tools the table explains; --json has them all
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.:-]")  # registry/card.py's NAME_PATTERN
_NAME_LIMIT = 128
SHOWN_RENAMES = 10


@dataclass(frozen=True)
class Query:
    text: str
    relevant: frozenset[str]
    id: str = ""


def safe_name(name: str) -> str:
    """A dataset's tool name as the registry may hold it: itself when it fits; otherwise
    each refused character becomes '_' ('PDF&URLTool' → 'PDF_URLTool'), and a name left with
    no letter or digit ('天气查询' → '____') gets '_' and 8 hex digits of its sha256, as an
    exported name does (registry/formats.py). ``dataset_names`` keeps two names apart; the
    renaming is never silent (``renamed_tools``: eval and simulate say it)."""
    if len(name) <= _NAME_LIMIT and not _INVALID_NAME_CHARS.search(name):
        return name
    safe = _INVALID_NAME_CHARS.sub("_", name)[:_NAME_LIMIT]
    return safe if re.search(r"[A-Za-z0-9]", safe) else _hashed(name)


def _hashed(name: str) -> str:
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{_INVALID_NAME_CHARS.sub('_', name)[: _NAME_LIMIT - 9]}_{digest}"


def dataset_names(names: Iterable[str]) -> dict[str, str]:
    """Each of a dataset's tool names → the name it is registered as: ``safe_name``, with the
    hash of ``_hashed`` for a renamed one that would meet another name ('a&b' and 'a_b')."""
    names = list(dict.fromkeys(names))
    taken: dict[str, int] = {}
    for name in names:
        taken[safe_name(name)] = taken.get(safe_name(name), 0) + 1
    return {
        name: safe_name(name)
        if taken[safe_name(name)] == 1 or safe_name(name) == name
        else _hashed(name)
        for name in names
    }


def renamed_tools(data: Path) -> dict[str, str]:
    """The dataset's tool names the registry refuses, each with the name it is registered as
    (``dataset_names``)."""
    names = [item.get("name") for _, item in read_jsonl(data / "tools.jsonl")]
    mapped = dataset_names(n for n in names if isinstance(n, str))
    return {old: new for old, new in mapped.items() if old != new}


def renames_line(renamed: dict[str, str]) -> str:
    """How renamed tools are said: the rule, then each name and what it became."""
    shown = ", ".join(f"{old!r} → {new!r}" for old, new in list(renamed.items())[:SHOWN_RENAMES])
    more = f", and {len(renamed) - SHOWN_RENAMES} more" if len(renamed) > SHOWN_RENAMES else ""
    return (
        f"renamed {len(renamed)} tool(s): a tool name holds only A-Z a-z 0-9 _ . : - (at most "
        f"{_NAME_LIMIT}): {shown}{more}"
    )


class DatasetError(ValueError):
    """A dataset file the command cannot use; the message names the file and line."""


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; DatasetError on the first bad one."""
    try:
        for number, item in read_lines(path):
            if not isinstance(item, dict):
                kind = json_kind(item)
                raise DatasetError(f"{path}:{number}: expected a JSON object, not {kind}")
            yield number, item
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None


def _tool(path: Path, number: int, item: dict[str, Any]) -> dict[str, Any]:
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise DatasetError(f"{path}:{number}: a tool needs a 'name' string")
    return item


def _query(path: Path, number: int, item: dict[str, Any], names: dict[str, str]) -> Query:
    text, relevant = item.get("query"), item.get("relevant")
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"{path}:{number}: a query needs a non-empty 'query' string")
    if (
        not isinstance(relevant, list)
        or not relevant
        or not all(isinstance(n, str) and n for n in relevant)
    ):
        got = "an empty array" if relevant == [] else json_kind(relevant)
        if isinstance(relevant, list) and relevant:
            got = "an array holding something else than names"
        raise DatasetError(
            f"{path}:{number}: 'relevant' must be a non-empty array of tool names, not {got}"
        )
    registered = frozenset(names.get(n, safe_name(n)) for n in relevant)
    return Query(text, registered, str(item.get("id", "")))


def load_dataset(
    data: Path, limit: int | None = None, skip_prefix: str | None = None
) -> tuple[list[dict[str, Any]], list[Query]]:
    """The tools and (the first ``limit``) queries of a dataset folder, less those whose id
    starts with ``skip_prefix`` (a tuning split); DatasetError if a line is unusable or
    either file holds nothing."""
    tools_path, queries_path = data / "tools.jsonl", data / "queries.jsonl"
    read = [_tool(tools_path, n, item) for n, item in read_jsonl(tools_path)]
    names = dataset_names(tool["name"] for tool in read)
    tools = [{**tool, "name": names[tool["name"]]} for tool in read]
    queries = [_query(queries_path, n, item, names) for n, item in read_jsonl(queries_path)]
    if skip_prefix:
        queries = [q for q in queries if not q.id.startswith(skip_prefix)]
    for path, rows in ((tools_path, tools), (queries_path, queries)):
        if not rows:
            raise DatasetError(f"{path}: no {path.stem} in it")
    return tools, queries[:limit] if limit else queries


def load_queries(path: Path, tools: Iterable[dict[str, Any]]) -> list[Query]:
    """Another queries file of a dataset whose ``tools`` (as ``load_dataset`` gave them) are
    named as the dataset names them; DatasetError if a line is unusable or it holds nothing."""
    names = {tool["name"]: tool["name"] for tool in tools}
    queries = [_query(path, n, item, names) for n, item in read_jsonl(path)]
    if not queries:
        raise DatasetError(f"{path}: no queries in it")
    return queries


def loaded_tools(batch: ParsedBatch, path: Path) -> set[str]:
    """The names of the tools that can be registered; DatasetError if there are none."""
    if not batch.cards:
        raise DatasetError(
            f"{path}: none of its {len(batch.rejects)} tools is a valid card "
            f"(the first: {first_problem(batch.rejects[0])})"
        )
    return {card.name for card in batch.cards}


def first_problem(reject: dict[str, Any]) -> str:
    """One rejected tool's first problem, as a line."""
    problem = (reject.get("problems") or [{"message": "rejected"}])[0]
    where = ".".join(map(str, problem.get("loc") or []))
    return f"{reject.get('name') or 'unnamed'}: {where + ': ' if where else ''}{problem['message']}"


def unknown_labels(queries: Sequence[Query], known: set[str]) -> int:
    """How many queries name a tool that is not registered (unknown, or rejected); said on
    stderr, since each such name can only be a miss."""
    count = sum(1 for q in queries if not q.relevant <= known)
    if count:
        print(
            f"warning: {count} of {len(queries)} queries name a tool that is not registered "
            "(not in tools.jsonl, or rejected); those names count as misses",
            file=sys.stderr,
        )
    return count


def hit_at_1(ranked: Sequence[str], relevant: frozenset[str]) -> float:
    return float(bool(ranked) and ranked[0] in relevant)


def recall_at(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def ndcg_at(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """Binary-gain nDCG (Järvelin & Kekäläinen 2002)."""
    dcg = sum(1 / math.log2(i + 2) for i, name in enumerate(ranked[:k]) if name in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal


def score(ranked: Sequence[str], relevant: frozenset[str]) -> dict[str, float]:
    return {
        "hit@1": hit_at_1(ranked, relevant),
        "recall@3": recall_at(ranked, relevant, 3),
        "recall@5": recall_at(ranked, relevant, 5),
        "ndcg@10": ndcg_at(ranked, relevant, 10),
    }


def mean_scores(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    rows = list(rows)
    return {m: round(sum(r[m] for r in rows) / max(len(rows), 1), 4) for m in METRICS}


@contextmanager
def throwaway_services(settings: Settings, encoder: Encoder | None) -> Iterator[Services]:
    """The service's parts on a temporary SQLite registry, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="toolreach-eval-") as tmp:
        throwaway = settings.model_copy(
            update={"database_url": f"sqlite:///{tmp}/eval.db", "load_demo": False}
        )
        services = build_services(throwaway, encoder)
        try:
            yield services
        finally:
            services.close()


def evaluate(
    data: Path,
    settings: Settings,
    encoder: Encoder | None = None,
    limit: int | None = None,
    skip_prefix: str | None = None,
    no_fit: int = NO_FIT_SAMPLE,
) -> dict[str, Any]:
    """Every query through the full pipeline and each ablation; the confidence's
    calibration and its no-fit test (``no_fit`` queries asked without their tools)."""
    tools, queries = load_dataset(data, limit, skip_prefix)
    with throwaway_services(settings, encoder) as services:
        batch = parse_batch(tools, NAMESPACE)
        unknown = unknown_labels(queries, loaded_tools(batch, data / "tools.jsonl"))
        with (
            progress_bar(len(batch.cards), "embedding tools", unit="tool") as bar,
            unit_of_work(services.session_factory) as session,
        ):
            write_cards(session, services.encoder, batch.cards, progress=bar.update)
        services.index.sync()
        services.examples.refresh()  # the cards' examples, as a route finds them
        examples = services.examples.get(NAMESPACE)
        snapshot = services.index.get(NAMESPACE)
        if snapshot is None:  # loaded_tools saw cards: only a failed write leaves none
            raise RuntimeError("the evaluation registry is empty after writing its tools")
        vectors = _encode_queries(services.encoder, [q.text for q in queries])
        per_variant: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
        complete: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
        in_scope: list[Asked] = []
        view = NamespaceView(snapshot.index, examples=examples)
        # the service's product (int8 on large sets)
        routers = {
            variant: Router(services.index.config, stages, cosines=services.cosines)
            for variant, stages in VARIANTS.items()
        }
        for query, vector in progress_iter(
            list(zip(queries, vectors, strict=True)), "routing", unit="query"
        ):
            for variant, router in routers.items():
                options = RouteOptions(k=10, split=variant != "one_part")
                ranked = router.route(view, query.text, vector, options)
                names = [c.name for c in ranked]
                per_variant[variant].append(score(names, query.relevant))
                complete[variant].append(step_scores(names, query.relevant))
                if variant == "full":
                    in_scope.append(top_of(ranked, query.relevant))
        left_out = no_fit_test(services, snapshot, queries, vectors, no_fit)
    return {
        "dataset": str(data),
        "tools": len(batch.cards),
        "rejected_tools": [r["name"] for r in batch.rejects],
        "rejections": [first_problem(r) for r in batch.rejects],  # why, one line each
        "renamed_tools": renamed_tools(data),  # name in the dataset → name registered
        "queries": len(queries),
        "queries_naming_unregistered_tools": unknown,
        "model": services.encoder.name,
        "results": {variant: mean_scores(rows) for variant, rows in per_variant.items()},
        "completeness": {variant: completeness(rows) for variant, rows in complete.items()},
        "confidence": confidence_report(in_scope, left_out, RECOMMENDED_MIN_CONFIDENCE),
    }


def no_fit_test(
    services: Services,
    snapshot: Snapshot,
    queries: Sequence[Query],
    vectors: Sequence[np.ndarray],
    size: int,
) -> list[Asked]:
    """``size`` of the queries asked again, each of a namespace without its labelled tools
    (``no_fit.asked_without``), with the service's cosine product."""
    chosen = sample(len(queries), size)
    if not chosen:
        return []
    index = snapshot.index
    config = services.index.config
    corpus = [doc_tokens(card_to_doc(snapshot.cards[n]), config.fields) for n in index.names]
    questions = [(queries[i].text, queries[i].relevant, vectors[i]) for i in chosen]
    cosines = services.cosines
    examples = services.examples.get(NAMESPACE)
    return asked_without(index, corpus, questions, config, cosines, cosines.prepare, examples)


def _encode_queries(encoder: Encoder, queries: list[str], batch: int = 256) -> list[np.ndarray]:
    """Per query, the rows a route takes: the whole query, then each of its parts."""
    groups = [query_texts(q) for q in queries]
    flat = [text for group in groups for text in group]
    parts = [
        np.asarray(encoder.encode(flat[start : start + batch]), dtype=np.float32)
        for start in progress_iter(range(0, len(flat), batch), "embedding queries", unit="batch")
    ]
    rows = np.vstack(parts) if parts else np.zeros((0, encoder.dim), dtype=np.float32)
    bounds = np.cumsum([0, *(len(g) for g in groups)])
    return [rows[bounds[i] : bounds[i + 1]] for i in range(len(groups))]


def format_table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['dataset']}: {report['tools']} tools, {report['queries']} queries, "
        f"model {report['model']}",
        f"{'variant':<16}" + "".join(f"{m:>10}" for m in METRICS),
    ]
    for variant, values in report["results"].items():
        lines.append(f"{variant:<16}" + "".join(f"{values[m]:>10.3f}" for m in METRICS))
    if "completeness" in report:
        lines += format_completeness(report["completeness"])
    if "confidence" in report:
        lines += format_confidence(report["confidence"])
    if report.get("renamed_tools"):
        lines.append(renames_line(report["renamed_tools"]))
    rejections = report.get("rejections", [])
    if rejections:
        lines.append(f"rejected tools ({len(rejections)}, not registered):")
        lines += [f"  {line}" for line in rejections[:SHOWN_REJECTIONS]]
        if len(rejections) > SHOWN_REJECTIONS:
            lines.append(f"  ... and {len(rejections) - SHOWN_REJECTIONS} more (--json lists all)")
    return "\n".join(lines)
