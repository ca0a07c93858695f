"""The git suite: tasks over the real third-party MCP server mcp-server-git (see README.md)."""
