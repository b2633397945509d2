"""A registry in this process, for the in-process benchmarks: a dataset written as
``toolreach eval`` writes it (``registered``), the catalog a ``bench.perf.route_cost`` run
filled (``stored_services``), or synthetic cards made from templates (``synthetic_card``,
``fill_database``, ``synthetic_services``); ``embedded`` embeds a step as a route does."""

from __future__ import annotations

import random
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.common import NAMESPACE

if TYPE_CHECKING:
    from app.route.service import EmbeddedStep
    from app.services import Services
    from app.tools.live_index import Snapshot
    from registry.card import ToolCard


@contextmanager
def registered(
    tools: list[dict[str, Any]],
    settings: Any = None,
    encoder: Any = None,
    examples: bool = False,
) -> Iterator[tuple[Services, Snapshot]]:
    """A dataset's tools written as ``toolreach eval`` writes them (parse, check, embed,
    store) into a throw-away SQLite registry of the service's parts, and its index loaded
    (``examples``: the cards' examples embedded too); the parts and the namespace's snapshot."""
    from app.cli.evaluate import NAMESPACE as EVAL_NAMESPACE
    from app.cli.evaluate import throwaway_services
    from app.db import unit_of_work
    from app.settings import Settings
    from app.tools.catalog import parse_batch, write_cards

    with throwaway_services(settings or Settings(), encoder) as services:
        batch = parse_batch(tools, EVAL_NAMESPACE)
        with unit_of_work(services.session_factory) as session:
            write_cards(session, services.encoder, batch.cards)
        services.index.sync()
        if examples:
            services.examples.refresh()
        snapshot = services.index.get(EVAL_NAMESPACE)
        assert snapshot is not None
        yield services, snapshot


@contextmanager
def stored_services(db: Path) -> Iterator[Services]:
    """The service's parts on a SQLite file (a catalog ``bench.perf.route_cost`` filled),
    its index and the cards' examples loaded."""
    from app.services import build_services
    from app.settings import Settings

    settings = Settings(_env_file=None, database_url=f"sqlite:///{db}")
    services = build_services(settings)
    try:
        services.index.sync()
        services.examples.refresh()
        yield services
    finally:
        services.close()


def embedded(
    services: Services, query: str, namespace: str = NAMESPACE, **options: Any
) -> EmbeddedStep:
    """A step's texts embedded as the route executor embeds them, for ``rank_step``."""
    from app.route.service import EmbeddedStep, step_texts
    from app.schemas import RouteRequest

    request = RouteRequest.model_validate({"query": query, "namespace": namespace})
    texts = step_texts(request, services.index)
    vectors = np.asarray(services.encoder.encode(texts, **options), dtype=np.float32)
    return EmbeddedStep(texts, vectors, 0.0)


# --- synthetic cards ----------------------------------------------------------------------

# fmt: off
VERBS = (
    "get", "list", "create", "update", "delete", "search", "find", "cancel", "book", "send",
    "track", "convert", "export", "import", "schedule", "approve", "archive", "restore",
    "validate", "summarize", "translate", "upload", "download", "share", "sync",
)
NOUNS = (
    "order", "invoice", "shipment", "user", "account", "event", "meeting", "email", "file",
    "folder", "report", "ticket", "payment", "refund", "subscription", "product", "review",
    "contract", "room", "flight", "hotel", "forecast", "rate", "dashboard", "alert", "backup",
    "certificate", "domain", "repository", "build", "deployment", "playlist", "recipe",
)
DOMAINS = (
    "billing", "logistics", "calendar", "mail", "storage", "weather", "finance", "travel",
    "devops", "media", "crm", "support", "hr", "legal", "marketing", "analytics", "security",
    "retail", "health", "education",
)
# fmt: on


def synthetic_card(i: int, rng: random.Random) -> ToolCard:
    """A card made from templates (seeded by ``rng``): a verb on a noun in a domain."""
    from registry.card import ToolCard

    verb, noun, domain = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(DOMAINS)
    other = rng.choice(NOUNS)
    return ToolCard(
        name=f"{domain}_{verb}_{noun}_{i}",
        summary=f"{verb.capitalize()} a {noun} in {domain}.",
        description=(
            f"{verb.capitalize()} a {noun} in the {domain} system by its id. Use it when the user "
            f"asks to {verb} one {noun}; to {verb} a {other} use the {other} tools instead."
        ),
        parameters={
            "type": "object",
            "properties": {
                f"{noun}_id": {"type": "string", "description": f"id of the {noun}"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            "required": [f"{noun}_id"],
        },
        tags=[domain, noun],
        examples=[f"please {verb} the {noun} {rng.randint(1, 999)}"],
    )


class StoredVectors:
    """An encoder that reports the real model's name but returns seeded random unit vectors."""

    def __init__(self, name: str, dim: int, seed: int = 7) -> None:
        self.name, self.dim = name, dim
        self._rng = np.random.default_rng(seed)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = self._rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def fill_database(url: str, size: int, encoder: Any, real: bool) -> float:
    """Register ``size`` synthetic cards as the admin API's bulk import does (parse and check
    each card from its JSON, embed, store, in one transaction); the seconds that took.
    ``real``: embedded by ``encoder``; otherwise random vectors stored under its name."""
    from app.db import unit_of_work
    from app.services import build_services
    from app.settings import Settings
    from app.tools.catalog import import_items
    from app.tools.examples import text_vectors

    rng = random.Random(size)
    items = [synthetic_card(i, rng).model_dump(mode="json") for i in range(size)]
    settings = Settings(_env_file=None, database_url=url, encoder="fake")
    writer = encoder if real else StoredVectors(encoder.name, encoder.dim)
    services = build_services(settings, writer)
    started = time.perf_counter()
    with unit_of_work(services.session_factory) as session:
        batch, statuses = import_items(session, services.encoder, items, None)
    elapsed = time.perf_counter() - started
    with unit_of_work(services.session_factory) as session:  # the cards' examples' vectors,
        # stored as the server's background thread stores them (app/tools/examples.py)
        text_vectors(session, services.encoder, [e for item in items for e in item["examples"]])
    services.close()
    if statuses is None:
        raise RuntimeError(f"synthetic cards were refused: {batch.rejects[:3]}")
    return elapsed


@contextmanager
def synthetic_services(size: int, encoder: Any) -> Iterator[Services]:
    """The service's parts over ``size`` synthetic cards (stored vectors) in a throw-away
    SQLite file, as the in-process benchmarks measure them."""
    from app.services import build_services
    from app.settings import Settings

    with tempfile.TemporaryDirectory(prefix="toolreach-bench-") as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        print(f"writing {size} synthetic cards ...", file=sys.stderr, flush=True)
        fill_database(url, size, encoder, real=False)
        services = build_services(Settings(_env_file=None, database_url=url), encoder)
        try:
            yield services
        finally:
            services.close()
