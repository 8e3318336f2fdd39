"""The MCP server: the query stages as tools, their token budget, outputs and frame errors."""
