"""Learning from reports: a namespace's reranker trained off the request path, guarded,
stored and served (docs/ROUTING.md, "Learning from reports")."""
