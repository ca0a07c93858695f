"""The forge suite over a real MCP stdio server (tasks/forge/mcp_server.py)."""
