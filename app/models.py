"""Every table of the service on one metadata: the registry's, and the service's own."""

from app.dashboard.signouts import DashboardSignout
from app.loop.models import Feedback, RouteCandidate, RouteEvent
from app.sources.models import Source, SourceTool
from registry.models import Base, Embedding, RegistryState, Tool, ToolVersion

__all__ = [
    "Base",
    "DashboardSignout",
    "Embedding",
    "Feedback",
    "RegistryState",
    "RouteCandidate",
    "RouteEvent",
    "Source",
    "SourceTool",
    "Tool",
    "ToolVersion",
]
