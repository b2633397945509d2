"""The heavy parts, built once per process in the app's lifespan and torn down with it."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import partial
from importlib import resources

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app import migrate
from app.advice.room import AdviceRoom
from app.capacity.slots import Slots
from app.db import make_engine, make_probe, make_session_factory, unit_of_work
from app.db_health import DatabaseHealth
from app.embedding.batching import BatchingEncoder
from app.embedding.cosines import CosineBatcher
from app.embedding.encoders import Encoder, make_encoder
from app.gateway.service import Gateway
from app.keys.store import KeyStore
from app.learning.repository import LEARNING_CHANNEL
from app.learning.service import LearningCache
from app.limits.limiter import RateLimiter
from app.loop.events import EventWriter
from app.loop.feedback import OtherReplicas, Waits
from app.loop.memory import MemoryCache
from app.loop.repository import ROUTE_WANTED_CHANNEL
from app.loop.validation import Guesser, ValidatedCalls
from app.metrics import Metrics
from app.route.executor import RouteExecutor
from app.route.guess import guess_tools
from app.route.views import NamespaceViews
from app.routing import Router
from app.routing.confidence_fit import CONFIDENCE_MODEL
from app.settings import Settings
from app.sources.service import SourceService
from app.tools.catalog import parse_batch, write_cards
from app.tools.examples import ExampleCache
from app.tools.listener import Listener
from app.tools.live_index import IndexManager
from app.tools.lookalikes import LookalikeCache
from registry import repository
from registry.repository import REVISION_CHANNEL

log = logging.getLogger("toolreach")


@dataclass(frozen=True, kw_only=True)
class Routing:
    """What a route reads of the service (app/route/deps.py ``RouteDeps``)."""

    index: IndexManager
    encoder: Encoder
    views: NamespaceViews
    router: Router
    cosines: CosineBatcher
    events: EventWriter
    metrics: Metrics
    settings: Settings


@dataclass(frozen=True, kw_only=True)
class Services:
    """Every part a serving process holds, built once in dependency order
    (``build_services``) and torn down with the process."""

    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    # Whether the database answers; refuses database work at once while it does not.
    health: DatabaseHealth
    encoder: BatchingEncoder
    # Concurrent routes share one matrix product for their cosine rows (app/embedding/cosines.py).
    cosines: CosineBatcher
    index: IndexManager
    events: EventWriter
    metrics: Metrics
    # Steps that used a tool successfully, as evidence for it (app/loop/memory.py).
    memory: MemoryCache
    # Each card's example requests as vectors, voting for their tool (app/tools/examples.py).
    examples: ExampleCache
    # Each namespace's guarded, learned model, trained and loaded off the request path
    # (app/learning/service.py); routes read its serving model.
    learning: LearningCache
    # The card doctor's advice, computed on a thread of its own and cached (app/advice/room.py).
    advice: AdviceRoom
    # What a route reads (app/route/deps.py), and POST /v1/route's queue and worker threads
    # (app/route/executor.py).
    routing: Routing
    executor: RouteExecutor
    # /v1/validate calls naming a route, recorded by the event writer's thread.
    validated: ValidatedCalls
    # The tools an invented name means by what it does: its words and arguments routed as a
    # step, unrecorded (app/route/guess.py), for /v1/validate, /v1/call and MCP.
    guess: Guesser
    # Every key, environment and table, in memory; reloaded every key_refresh_seconds.
    keys: KeyStore
    # Look-alike tools of every namespace, kept current in the background (app/tools/lookalikes.py).
    lookalikes: LookalikeCache
    # At most a few expensive requests of each kind at once (app/capacity/slots.py).
    slots: Slots
    # Requests and failed sign-ins counted per client and key, shared through the database.
    limiter: RateLimiter
    # Sources read into cards, and the gateway that forwards calls to them (docs/SOURCES.md).
    sources: SourceService
    gateway: Gateway
    # Postgres only (None on SQLite): other replicas' writes, feedback requests and models,
    # heard at once (app/tools/listener.py), and feedback for a route another replica
    # answered a moment ago (app/loop/feedback.py).
    listener: Listener | None = None
    replicas: OtherReplicas | None = None

    def start(self) -> None:
        """The background threads of a serving process (the CLI commands run none)."""
        self.health.start()
        self.index.start_polling(self.settings.index_poll_seconds)
        self.lookalikes.start()
        if self.listener is not None:
            self.listener.start()
        self.keys.start(self.settings.key_refresh_seconds)
        self.limiter.start()
        self.events.start()
        self.executor.start()
        self.memory.start(self.settings.prior_refresh_seconds)
        self.examples.start()
        self.learning.start(
            self.settings.index_poll_seconds, self.settings.learning_interval_seconds
        )

    async def start_sources(self) -> None:
        """On the serving event loop: the sources' schedule, and a session held open to each
        live MCP source to hear its tools/list_changed (opened in the background)."""
        self.sources.start()
        if self.settings.source.watch:
            self.sources.watch(self.gateway.pool)

    async def close_sources(self) -> None:
        await self.sources.aclose()
        await self.gateway.aclose()

    def close(self) -> None:
        self.advice.stop()  # the running computation ends at its next route
        self.executor.stop()  # queued routes get 503; routes in hand finish and are recorded
        if self.listener is not None:
            self.listener.stop()
        self.index.stop()
        self.lookalikes.stop()
        self.keys.stop()
        self.limiter.stop()
        self.memory.stop()
        self.examples.stop()
        self.learning.stop()
        self.events.stop()  # writes what is still buffered: a clean stop loses no event
        self.health.stop()
        self.engine.dispose()


def make_event_writer(settings: Settings, factory: sessionmaker[Session]) -> EventWriter:
    return EventWriter(
        factory,
        buffer_size=settings.event_buffer_size,
        batch_size=settings.event_batch_size,
        flush_seconds=settings.event_flush_seconds,
        retry_max_seconds=settings.event_retry_max_seconds,
    )


def make_listener(
    url: str, index: IndexManager, events: EventWriter, learning: LearningCache | None = None
) -> Listener:
    """Other replicas' new revisions sync the index now; their feedback for a route this
    replica answered writes its event now; their new serving models load now; after each
    (re)connect, one sync (and one load) catches up."""
    handlers = {REVISION_CHANNEL: index.heard, ROUTE_WANTED_CHANNEL: events.write_soon}
    if learning is None:
        return Listener(url, handlers, on_connect=index.wake)

    def caught_up() -> None:
        index.wake()
        learning.heard()

    return Listener(url, {**handlers, LEARNING_CHANNEL: learning.heard}, on_connect=caught_up)


def make_metrics(index: IndexManager, events: EventWriter) -> Metrics:
    metrics = Metrics()
    metrics.watch(
        index.namespaces,
        lambda: (events.dropped, events.buffered, events.written),
        has_tools=lambda namespace: len(getattr(index.get(namespace), "cards", ())) > 0,
    )
    return metrics


def open_database(settings: Settings, health: DatabaseHealth | None = None) -> Engine:
    """The embedded SQLite default migrates itself; Postgres must be migrated explicitly.

    The engine's waits are bounded by the settings; with ``health``, it reports its timeouts
    there and is refused new work while the database does not answer.
    """
    if settings.is_sqlite:
        migrate.upgrade(settings.sqlalchemy_url)
    else:
        migrate.ensure_current(settings.sqlalchemy_url)
    engine = make_engine(settings.sqlalchemy_url, settings.database, health)
    if health is not None:
        health.probe = make_probe(engine, settings.database)
    return engine


def limit_blas_threads() -> None:
    """One BLAS thread per caller: routes run concurrently, each on its request's thread.

    A route's cosine rows are BLAS calls (GEMV). With OpenBLAS's own thread pool, concurrent
    callers queue on that pool and its threads spin: at 10,000 tools and 16 clients the
    cosine line took most of the server's CPU (docs/BENCHMARKS.md, "One BLAS thread per
    caller"). Concurrency comes from the requests instead.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def build_encoder(settings: Settings) -> Encoder:
    """The configured encoder, limited to `encoder_threads` threads."""
    if settings.encoder.startswith("minilm+") or settings.encoder == "minilm":
        import torch

        torch.set_num_threads(settings.encoder_threads)
    return make_encoder(
        settings.encoder,
        threads=settings.encoder_threads,
        mix_weight=settings.encoder_mix_weight,
        model_dir=settings.model_dir,
    )


def build_services(settings: Settings, encoder: Encoder | None = None) -> Services:
    """Every part, in dependency order, on a database whose schema is at head."""
    limit_blas_threads()
    health = DatabaseHealth()
    engine = open_database(settings, health)
    factory = make_session_factory(engine)
    batching = build_batching_encoder(settings, encoder)
    cosines = CosineBatcher(
        int8_min_tools=settings.cosine_int8_min_tools,
        int8_dims=settings.cosine_int8_dims,
        moment_dims=settings.cosine_moment_dims,
    )
    index = IndexManager(factory, batching, settings.router, on_matrix=cosines.prepare)
    events = make_event_writer(settings, factory)
    metrics = make_metrics(index, events)
    metrics.watch_encoder(batching)
    metrics.database_reachable.set_function(lambda: float(health.state.reachable))
    memory = MemoryCache(
        factory,
        batching,
        settings.prior_half_life_days,
        index.has_tool,
        dims=settings.router.memory_dims,
        needed=settings.trust_keys,
    )
    examples = ExampleCache(index, factory, batching)
    learning = LearningCache(
        factory,
        batching,
        index,
        memory,
        enabled=settings.learning,
        min_new_steps=settings.learning_min_new_steps,
        needed=settings.trust_keys,
    )
    routing = Routing(
        index=index,
        encoder=batching,
        views=NamespaceViews(index, examples, learning),
        router=Router(settings.router, cosines=cosines),
        cosines=cosines,
        events=events,
        metrics=metrics,
        settings=settings,
    )
    executor = RouteExecutor(
        routing,
        workers=settings.route_workers,
        max_batch=settings.route_max_batch,
        max_queue=settings.route_max_queue,
    )
    metrics.route_queue.set_function(executor.waiting)
    keys = KeyStore.from_settings(settings, factory)
    keys.refresh()  # the table's keys before the first request
    sources = SourceService(settings, factory, batching, index.sync)
    guess: Guesser = partial(guess_tools, routing)
    gateway = Gateway(
        settings,
        factory,
        index,
        events,
        metrics,
        sources.reach,
        on_list_changed=sources.request_sync,
        guess=guess,
    )
    listener, replicas = None, None
    if settings.listen_url is not None:
        listener = make_listener(settings.listen_url, index, events, learning)
        waits = Waits(settings.feedback_waits_per_key, settings.feedback_waits)
        replicas = OtherReplicas(factory, settings.feedback_wait_seconds, waits)
    services = Services(
        settings=settings,
        engine=engine,
        session_factory=factory,
        health=health,
        encoder=batching,
        cosines=cosines,
        index=index,
        events=events,
        metrics=metrics,
        memory=memory,
        examples=examples,
        learning=learning,
        advice=AdviceRoom(
            factory,
            index,
            batching,
            settings.trust_keys,
            seconds=settings.advice_seconds,
            fresh_seconds=settings.advice_fresh_seconds,
            wait_seconds=settings.advice_wait_seconds,
            per_key=settings.advice_waits_per_key,
            queue=settings.advice_queue,
        ),
        routing=routing,
        executor=executor,
        validated=ValidatedCalls(factory, events, index, buffer_size=settings.event_buffer_size),
        guess=guess,
        keys=keys,
        lookalikes=LookalikeCache(
            index, neighbours=settings.lookalike_neighbours, floor=settings.lookalike_floor
        ),
        slots=Slots.of_sizes(
            settings.slots_reports,
            settings.slots_imports,
            settings.slots_exports,
            on_refused=lambda kind: metrics.requests_refused.labels(kind).inc(),
        ),
        limiter=RateLimiter.from_settings(settings, factory),
        sources=sources,
        gateway=gateway,
        listener=listener,
        replicas=replicas,
    )
    if settings.load_demo:
        load_demo_once(services)
    index.sync()
    learning.load()  # the stored serving models before the first route
    return services


def build_batching_encoder(settings: Settings, encoder: Encoder | None) -> BatchingEncoder:
    """The encoder behind the batching that lets concurrent routes share model calls
    (app/embedding/batching.py)."""
    batching = BatchingEncoder(
        encoder or build_encoder(settings),
        query_threads=settings.encoder_threads,
        bulk_threads=settings.encoder_bulk_threads,
        parallel=settings.encoder_parallel_batches,
        cache_size=settings.embedding_cache_size,
    )
    if batching.name != CONFIDENCE_MODEL.encoder:  # it reads that encoder's raw cosines
        log.warning(
            "the route confidence was fit with %s, not %s: it is not calibrated for it "
            "(python -m bench.tools.fit_confidence refits it)",
            CONFIDENCE_MODEL.encoder,
            batching.name,
        )
    return batching


def demo_cards() -> list[object]:
    text = resources.files("app").joinpath("demo/catalog.json").read_text(encoding="utf-8")
    items: list[object] = json.loads(text)
    return items


def load_demo_once(services: Services) -> None:
    """Load the demo catalog on a registry that was never written to."""
    with unit_of_work(services.session_factory) as session:
        if repository.current_revision(session) != 0:
            return
        batch = parse_batch(demo_cards(), None)
        if batch.rejects:
            raise RuntimeError(f"the demo catalog has invalid cards: {batch.rejects}")
        write_cards(session, services.encoder, batch.cards)
        log.info("loaded the demo catalog: %d tools", len(batch.cards))
