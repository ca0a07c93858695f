"""The notes_mcp suite: a code-free suite over an MCP tools/list dump (catalog.json, tasks.yaml)."""
