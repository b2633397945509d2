"""The ranking core: pure functions and immutable data, no web framework, no ORM, no model.

``RouterIndex.build`` indexes a namespace's tool cards once; ``route`` answers a query.
``docs/ROUTING.md`` explains every stage and weight; docs/BENCHMARKS.md measures them.
"""

from app.routing.index import RouterIndex
from app.routing.parts import query_texts, step_parts
from app.routing.pipeline import route
from app.routing.text import embedding_text
from app.routing.types import ALL_STAGES, Candidate, FieldWeights, RouterConfig, ToolDoc
from app.routing.window import step_window

__all__ = [
    "ALL_STAGES",
    "Candidate",
    "FieldWeights",
    "RouterConfig",
    "RouterIndex",
    "ToolDoc",
    "embedding_text",
    "query_texts",
    "route",
    "step_parts",
    "step_window",
]
