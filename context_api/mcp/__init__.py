"""MCP Streamable HTTP at /mcp: the operation table projected as MCP tools (see docs/mcp.md)."""
