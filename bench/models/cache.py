"""On-disk response cache keyed by a hash of everything that determines the answer.

One JSON file per request under ``<cache>/responses/ab/<hash>.json``, written atomically. A damaged
entry is treated as a miss and replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from surfbench.bench.base.paths import cache_root
from surfbench.bench.base.secrets import redact


def request_hash(payload: Mapping[str, object]) -> str:
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_root() / "responses"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, object] | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, value: Mapping[str, object]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_text(redact(json.dumps(value, ensure_ascii=False)), encoding="utf-8")
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def clear(self) -> int:
        """Delete every entry; return how many there were."""
        count = sum(1 for _ in self.root.glob("*/*.json")) if self.root.is_dir() else 0
        shutil.rmtree(self.root, ignore_errors=True)
        return count

    def size(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.is_dir() else 0
