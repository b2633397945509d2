"""Every table of the service on one metadata: the registry's, and the service's own."""

from app.event_models import Feedback, RouteCandidate, RouteEvent
from app.signouts import DashboardSignout
from registry.models import Base, Embedding, RegistryState, Tool, ToolVersion

__all__ = [
    "Base",
    "DashboardSignout",
    "Embedding",
    "Feedback",
    "RegistryState",
    "RouteCandidate",
    "RouteEvent",
    "Tool",
    "ToolVersion",
]
