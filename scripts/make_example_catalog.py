"""Write examples/gitea96.mcp.json: 96 operations of Gitea's own API as an MCP tools/list response.

Run from the repo root with Gitea's Swagger file (MIT licensed, published by the Gitea project):
    python scripts/make_example_catalog.py ../shared/catalogs/gitea-1.15-swagger.json
The pick is mechanical (every issue operation, then repository operations in file order, 96 in all),
so that the example is a realistic ~100-tool MCP server dump that nobody here wrote by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from surfbench.bench.catalog.importers import load_catalog

catalog = load_catalog(sys.argv[1])
picked = [op for op in catalog.operations if op.category == "issue"]
picked += [op for op in catalog.operations if op.category == "repository"][: 96 - len(picked)]
tools = [
    {
        "name": op.name,
        "description": op.description,
        "inputSchema": op.parameters,
        "annotations": {"readOnlyHint": op.read_only, "destructiveHint": op.destructive},
    }
    for op in picked
]
doc = {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}
out = Path("examples/gitea96.mcp.json")
out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
print(f"wrote {out}: {len(tools)} tools")
