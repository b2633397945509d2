"""Sources: where tools live (OpenAPI documents, live MCP servers), read into cards and
re-synced; a changed tool becomes a new version, a removed one is retired."""
