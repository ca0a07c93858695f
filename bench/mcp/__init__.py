"""MCP: live servers as catalogs and backends, through the official SDK (mcp_client, transport, guard)."""
