"""Every table of the service on one metadata: the registry's, and the service's own."""

from app.dashboard.signouts import DashboardSignout
from app.keys.models import ApiKey
from app.learning.models import LearnedModel, LearningSwitch
from app.limits.models import RateCount
from app.loop.models import Feedback, RouteEvent, RouteEventCandidate
from app.sources.models import Source, SourceTool
from registry.models import Base, Embedding, RegistryState, Tool, ToolVersion

__all__ = [
    "ApiKey",
    "Base",
    "DashboardSignout",
    "Embedding",
    "Feedback",
    "LearnedModel",
    "LearningSwitch",
    "RateCount",
    "RegistryState",
    "RouteEvent",
    "RouteEventCandidate",
    "Source",
    "SourceTool",
    "Tool",
    "ToolVersion",
]
