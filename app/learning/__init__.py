"""Learning from reports: a namespace's adapter trained off the request path, guarded,
stored and served (docs/ROUTING.md, "Learning from reports")."""
