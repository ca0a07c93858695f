"""The forge store as the MCP server last wrote it to the episode's working copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def forge_state(workdir: Path | None) -> dict[str, Any]:
    """The store the forge MCP server wrote to ``{workdir}/state.json`` ({} before it has written one)."""
    path = (workdir or Path(".")) / "state.json"
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else {}
