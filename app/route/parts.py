"""What routing a step needs of the service's parts, as protocols.

``app.services.Services`` has every one of these attributes, so it is passed as it is; the
route never imports it (the assembly imports the rooms, not the other way round). Settings
and metrics are named only by the members a route reads, so this room does not depend on
those modules either (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from app.embedding.cosines import CosineBatcher
from app.embedding.encoders import Encoder
from app.learning.service import LearningCache
from app.loop.events import EventWriter
from app.loop.memory import MemoryCache
from app.loop.prior import PriorCache
from app.tools.examples import ExampleCache
from app.tools.live_index import IndexManager


class RouteSettings(Protocol):
    @property
    def hash_queries(self) -> bool: ...  # store sha256 of each query instead of its text


class Counter(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class RouteMetrics(Protocol):
    @property
    def routes_refused(self) -> Counter: ...  # 503 overloaded: the queue was full

    def observe_route(
        self, namespace: str, seconds: float, stages: Mapping[str, float], found: bool
    ) -> None: ...


class RouteParts(Protocol):
    """The parts a route reads: the live index, the encoder, the usage prior, query memory,
    the examples, the serving learned models, the cosine products, the event writer, the
    metrics and one setting."""

    @property
    def index(self) -> IndexManager: ...
    @property
    def encoder(self) -> Encoder: ...
    @property
    def prior(self) -> PriorCache: ...
    @property
    def memory(self) -> MemoryCache | None: ...
    @property
    def examples(self) -> ExampleCache | None: ...
    @property
    def learning(self) -> LearningCache | None: ...
    @property
    def cosines(self) -> CosineBatcher: ...
    @property
    def events(self) -> EventWriter: ...
    @property
    def metrics(self) -> RouteMetrics: ...
    @property
    def settings(self) -> RouteSettings: ...
