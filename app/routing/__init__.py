"""The ranking core: pure functions and immutable data, no web framework, no ORM, no model.

``RouterIndex.build`` indexes a namespace's tool cards once; a ``NamespaceView`` holds it with
the namespace's gathered evidence; ``Router.route`` answers a step with ``RouteOptions``.
``docs/ROUTING.md`` explains every stage and weight; docs/BENCHMARKS.md measures them.
"""

from app.routing.index import RouterIndex
from app.routing.parts import query_texts, step_parts
from app.routing.pipeline import Router
from app.routing.text import embedding_text
from app.routing.types import (
    ALL_STAGES,
    Candidate,
    FieldWeights,
    RouteOptions,
    RouterConfig,
    ToolDoc,
)
from app.routing.view import NamespaceView
from app.routing.window import step_window

__all__ = [
    "ALL_STAGES",
    "Candidate",
    "FieldWeights",
    "NamespaceView",
    "RouteOptions",
    "Router",
    "RouterConfig",
    "RouterIndex",
    "ToolDoc",
    "embedding_text",
    "query_texts",
    "step_parts",
    "step_window",
]
