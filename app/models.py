"""Every table of the service on one metadata: the registry's, and the service's own."""

from registry.models import Base, Embedding, RegistryState, Tool, ToolVersion

__all__ = ["Base", "Embedding", "RegistryState", "Tool", "ToolVersion"]
