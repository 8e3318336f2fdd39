"""The ways in: the HTTP API (http/), the MCP server (mcp/) and the warm query daemon."""
