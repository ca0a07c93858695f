"""Wire-size and token counting, exactly as the metric definitions say.

Tool-block wire bytes use the dsh method: the UTF-8 length of compact JSON
``{"name","description","parameters"}`` per tool (what ``JSON.stringify`` produces), summed.
Token counts use tiktoken's ``o200k_base`` and ``cl100k_base`` encodings, loaded from the files that
LiteLLM's wheel ships: nothing is ever downloaded.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Protocol


class HasToolFields(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]: ...


def compact_json(value: Any) -> str:
    """``JSON.stringify(value)``: no spaces, non-ASCII kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_wire_text(tool: HasToolFields) -> str:
    return compact_json({"name": tool.name, "description": tool.description, "parameters": tool.parameters})


def tool_wire_bytes(tool: HasToolFields) -> int:
    return len(tool_wire_text(tool).encode("utf-8"))


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def valid_utf8(text: str) -> str:
    """``text`` as it can be encoded: lone surrogates (bytes no decoder could read) become U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class TokenizerUnavailable(RuntimeError):
    """tiktoken's encoding files are not on this machine."""


def _litellm_tokenizer_dir() -> Path | None:
    """Locate LiteLLM's bundled encodings without importing LiteLLM (its import is slow)."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return path if path.is_dir() else None


def ensure_offline_tiktoken() -> None:
    """Point tiktoken at bundled encodings before its first ``get_encoding`` (never download)."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    bundled = _litellm_tokenizer_dir()
    if bundled is not None:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)


_LOCK = threading.Lock()


def preload_encodings(names: tuple[str, ...] = ("o200k_base", "cl100k_base")) -> None:
    """Start loading encodings in the background (about 0.5 s each, mostly base64 decoding)."""

    def load() -> None:
        for name in names:
            try:
                _encoding(name)
            except TokenizerUnavailable:
                return  # reported by the first count_tokens call in the foreground

    threading.Thread(target=load, name="tiktoken-preload", daemon=True).start()


_ENCODINGS: dict[str, Any] = {}


def _encoding(name: str) -> Any:
    with _LOCK:  # one load per encoding, even when the preload thread is already at it
        if name not in _ENCODINGS:
            _ENCODINGS[name] = _load_encoding(name)
        return _ENCODINGS[name]


def _load_encoding(name: str) -> Any:
    ensure_offline_tiktoken()
    import tiktoken

    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises bare requests/urllib errors when it tries to fetch
        raise TokenizerUnavailable(
            f"tiktoken encoding {name!r} is not available offline ({type(exc).__name__}); install litellm "
            "(its wheel ships the encodings) or set TIKTOKEN_CACHE_DIR to a folder holding them"
        ) from None


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    """Tokens in ``text`` under a tiktoken encoding."""
    return len(_encoding(encoding).encode(text, disallowed_special=()))
