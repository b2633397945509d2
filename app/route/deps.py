"""What routing a step needs of the service, as protocols.

``app.services`` builds a value with these attributes before the executor that reads it;
the route never imports the assembly (the assembly imports the rooms, not the other way
round). Settings and metrics are named only by the members a route reads, so this room
does not depend on those modules either (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from app.embedding.cosines import CosineBatcher
from app.embedding.encoders import Encoder
from app.loop.events import EventWriter
from app.route.views import NamespaceViews
from app.routing import Router
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


class RouteDeps(Protocol):
    """What a route reads: the live index (is there anything to embed), the encoder, each
    namespace's view, the ranking core with its fixed parts, the cosine products (shared
    by a batch's steps), the event writer, the metrics and one setting."""

    @property
    def index(self) -> IndexManager: ...
    @property
    def encoder(self) -> Encoder: ...
    @property
    def views(self) -> NamespaceViews: ...
    @property
    def router(self) -> Router: ...
    @property
    def cosines(self) -> CosineBatcher: ...
    @property
    def events(self) -> EventWriter: ...
    @property
    def metrics(self) -> RouteMetrics: ...
    @property
    def settings(self) -> RouteSettings: ...
