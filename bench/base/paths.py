"""Where surfbench keeps things between runs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$SURFBENCH_CACHE``, else ``$XDG_CACHE_HOME/surfbench``, else ``~/.cache/surfbench``."""
    env = os.environ.get("SURFBENCH_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "surfbench"
