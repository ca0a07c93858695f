"""MCP: live servers as catalogs and backends, through the official SDK (client, transport, guard)."""
