"""Prometheus metrics, on a registry of each app's own (never the process-global one).

Only numbers and bounded labels: namespaces that hold tools (any other is ``NO_TOOLS``),
stages, outcomes. No query text and no tool names are ever put in a label, which is why
``/metrics`` may stay open (see the README).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class _StateCollector(Collector):
    """Values read at scrape time: index size per namespace, the event writer's counters."""

    def __init__(
        self,
        index_sizes: Callable[[], Mapping[str, int]],
        events: Callable[[], tuple[int, int, int]],
    ) -> None:
        self._index_sizes = index_sizes
        self._events = events

    def collect(self) -> Iterator[Metric]:
        tools = GaugeMetricFamily(
            "toolreach_index_tools", "Live tools in the in-memory index", labels=["namespace"]
        )
        for namespace, size in sorted(self._index_sizes().items()):
            tools.add_metric([namespace], size)
        yield tools
        dropped, buffered, written = self._events()
        yield CounterMetricFamily(
            "toolreach_route_events_dropped",
            "Route events dropped because the writer's buffer was full",
            value=dropped,
        )
        yield CounterMetricFamily(
            "toolreach_route_events_written", "Route events written to the database", value=written
        )
        yield GaugeMetricFamily(
            "toolreach_route_events_buffered", "Route events waiting to be written", value=buffered
        )


class _EncoderCollector(Collector):
    """The encoder's counters, read at scrape time: model calls and the texts they embedded
    (by kind: route texts or bulk card writes), and the route-text cache's hits and misses."""

    def __init__(self, encoder: object) -> None:
        self._encoder = encoder

    def collect(self) -> Iterator[Metric]:
        calls = getattr(self._encoder, "model_calls", None)
        texts = getattr(self._encoder, "model_texts", None)
        if calls is not None and texts is not None:
            family = CounterMetricFamily(
                "toolreach_model_calls",
                "Calls of the embedding model, by kind (route texts or bulk card writes)",
                labels=["kind"],
            )
            for kind, value in sorted(calls.items()):
                family.add_metric([kind], value)
            yield family
            family = CounterMetricFamily(
                "toolreach_model_texts",
                "Texts embedded by the model, by kind (a route embeds its step and its parts)",
                labels=["kind"],
            )
            for kind, value in sorted(texts.items()):
                family.add_metric([kind], value)
            yield family
        cache = getattr(self._encoder, "cache", None)
        if cache is not None:
            yield CounterMetricFamily(
                "toolreach_embedding_cache_hits",
                "Route texts found in the embedding cache (no model call for them)",
                value=cache.hits,
            )
            yield CounterMetricFamily(
                "toolreach_embedding_cache_misses",
                "Route texts not in the embedding cache (embedded, then held)",
                value=cache.misses,
            )
            yield GaugeMetricFamily(
                "toolreach_embedding_cache_entries",
                "Route texts held by the embedding cache (at most TOOLREACH_EMBEDDING_CACHE_SIZE)",
                value=len(cache),
            )


# The namespace label of a route or a report in a namespace that has no tools. Any caller
# may name any namespace; a label per name would let one add series without limit.
NO_TOOLS = "(no tools)"


class Metrics:
    """The service's series; one instance per app."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._has_tools: Callable[[str], bool] = lambda _namespace: True
        self.route_seconds = Histogram(
            "toolreach_route_duration_seconds",
            "Time to answer POST /v1/route (embed, rank and shape the answer)",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.stage_seconds = Histogram(
            "toolreach_route_stage_duration_seconds",
            "Time of each step of a route: embed the query, rank the tools",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.routes = Counter(
            "toolreach_routes",
            "Routes answered, by namespace and result (candidates or empty)",
            ["namespace", "result"],
            registry=self.registry,
        )
        self.routes_refused = Counter(
            "toolreach_routes_refused",
            "Routes refused at once (503 overloaded) because too many steps were waiting",
            registry=self.registry,
        )
        self.requests_refused = Counter(
            "toolreach_requests_refused",
            "Expensive requests refused at once (503 overloaded): every slot of their kind was "
            "held (app/capacity/slots.py)",
            ["slots"],
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "toolreach_rate_limited",
            "Requests refused with 429, by the limit they passed (client, key, auth)",
            ["kind"],
            registry=self.registry,
        )
        self.route_queue = Gauge(
            "toolreach_route_queue",
            "Steps waiting for a route worker",
            registry=self.registry,
        )
        self.database_reachable = Gauge(
            "toolreach_database_reachable",
            "1 while the database answers its probe, 0 while it does not (app/db_health.py)",
            registry=self.registry,
        )
        self.feedback = Counter(
            "toolreach_feedback",
            "Feedback recorded or updated, by namespace, outcome and verdict",
            ["namespace", "outcome", "verdict"],
            registry=self.registry,
        )
        self.calls = Counter(
            "toolreach_gateway_calls",
            "Calls forwarded by the gateway (POST /v1/call), by namespace, outcome and code",
            ["namespace", "outcome", "code"],
            registry=self.registry,
        )
        self.call_seconds = Histogram(
            "toolreach_gateway_call_duration_seconds",
            "Time of a call through the gateway, upstream included",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )

    def watch(
        self,
        index_sizes: Callable[[], Mapping[str, int]],
        events: Callable[[], tuple[int, int, int]],
        has_tools: Callable[[str], bool],
    ) -> None:
        """Expose values owned elsewhere, read when scraped; label only namespaces with
        tools (``has_tools``), the others as ``NO_TOOLS``."""
        self.registry.register(_StateCollector(index_sizes, events))
        self._has_tools = has_tools

    def watch_encoder(self, encoder: object) -> None:
        """Expose the encoder's model-call counts and its cache's (app/embedding/batching.py)."""
        self.registry.register(_EncoderCollector(encoder))

    def _namespace(self, namespace: str) -> str:
        return namespace if self._has_tools(namespace) else NO_TOOLS

    def observe_route(
        self, namespace: str, seconds: float, stages: Mapping[str, float], found: bool
    ) -> None:
        self.route_seconds.observe(seconds)
        for stage, value in stages.items():
            self.stage_seconds.labels(stage).observe(value)
        self.routes.labels(self._namespace(namespace), "candidates" if found else "empty").inc()

    def count_feedback(self, namespace: str, outcome: str, verdict: str) -> None:
        self.feedback.labels(self._namespace(namespace), outcome, verdict).inc()

    def count_call(self, namespace: str, code: str | None, seconds: float) -> None:
        """A gateway call; ``code`` None for a success (codes are a bounded set: HTTP
        statuses, the gateway's own, ``tool_error``)."""
        outcome = "success" if code is None else "error"
        self.calls.labels(self._namespace(namespace), outcome, code or "").inc()
        self.call_seconds.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
