"""ToolReach as an MCP server at /mcp: stateless streamable HTTP, JSON responses, meta-tools.

- ``arguments``: what each meta-tool takes (with the aliases models send) and its schema;
- ``server``: the MCP server and its meta-tools, each calling the service /v1 calls;
- ``http``: the ASGI endpoint: the same keys as /v1, the namespace, the session manager.
"""
