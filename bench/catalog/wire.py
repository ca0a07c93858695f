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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tiktoken import Encoding


class HasToolFields(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> Mapping[str, object]: ...


def compact_json(value: object) -> str:
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


_ENCODINGS: dict[str, Encoding] = {}


def _encoding(name: str) -> Encoding:
    with _LOCK:  # one load per encoding, even when the preload thread is already at it
        if name not in _ENCODINGS:
            _ENCODINGS[name] = _load_encoding(name)
        return _ENCODINGS[name]


def _load_encoding(name: str) -> Encoding:
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
    """Tokens in ``text`` under a tiktoken encoding: exact, except in a run of LONG_RUN characters or more.

    tiktoken's BPE grows faster than linearly in the length of one pre-token (a 50 MB string of
    letters took over 300 s), and a pre-token is at most a few characters longer than a run of letters
    (and marks) or of symbols and whitespace (no letter, no digit). Such a run, LONG_RUN characters or
    longer (the longest in the shipped and BFCL catalogs is 99), is cut into pieces of RUN_PIECE
    characters, each counted on its own; in a run of more than RUN_SAMPLES pieces, RUN_SAMPLES evenly
    spaced pieces are counted and their sum scaled to the run (:func:`long_runs`). Text with no such run
    is counted by one call to tiktoken, exactly as before.
    """
    enc = _encoding(encoding)
    runs = long_runs(text) if len(text) >= LONG_RUN else []
    if not runs:
        return _exact(enc, text)
    total, start = 0, 0
    for run_start, run_end in runs:
        total += _exact(enc, text[start:run_start]) + _run_tokens(enc, text, run_start, run_end)
        start = run_end
    return total + _exact(enc, text[start:])


LONG_RUN = 4096
"""Characters of one class in a row (letters and marks; or symbols and whitespace) from which counting estimates."""
RUN_PIECE = LONG_RUN // 2
"""Characters per piece a long run is counted in."""
RUN_SAMPLES = 32
"""Pieces of a long run counted at most (evenly spaced; their sum is scaled to the run's length)."""
_OUTSIDE = (r"[^\p{L}\p{M}]", r"[\p{L}\p{N}]")
"""A character that ends a run of letters and marks; one that ends a run of symbols and whitespace."""


class _Match(Protocol):
    def start(self) -> int: ...
    def end(self) -> int: ...


class _Pattern(Protocol):
    """A compiled ``regex`` pattern (the package ships no types), as :func:`long_runs` searches it."""

    def search(self, string: str, pos: int = ..., endpos: int = ...) -> _Match | None: ...


_PATTERNS: list[tuple[_Pattern, _Pattern]] = []


def _patterns() -> list[tuple[_Pattern, _Pattern]]:
    """Per class of run: (a character outside it, the same searched backwards), compiled once."""
    if not _PATTERNS:
        import regex  # tiktoken's own dependency

        _PATTERNS.extend((regex.compile(p), regex.compile(f"(?r){p}")) for p in _OUTSIDE)
    return _PATTERNS


def long_runs(text: str) -> list[tuple[int, int]]:
    """(start, end) of each run of LONG_RUN or more letters and marks, or of non-letters that are not digits.

    In order, not overlapping. Linear and cheap on ordinary text: only windows of RUN_PIECE characters
    tiling the text are tested (every run of 2 * RUN_PIECE = LONG_RUN characters holds one whole), each
    by a search that stops at its first character of another class; a window inside a run is then grown
    to the run's ends.
    """
    found: list[tuple[int, int]] = []
    for outside, outside_back in _patterns():
        pos = 0
        while pos + RUN_PIECE <= len(text):
            if outside.search(text, pos, pos + RUN_PIECE) is not None:
                pos += RUN_PIECE
                continue
            before = outside_back.search(text, 0, pos)
            after = outside.search(text, pos + RUN_PIECE)
            start, end = (before.end() if before else 0), (after.start() if after else len(text))
            if end - start >= LONG_RUN:
                found.append((start, end))
            pos = max(end, pos + RUN_PIECE)
    found.sort()
    merged: list[tuple[int, int]] = []
    for start, end in found:  # marks are in both classes: runs of the two may overlap
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _run_tokens(enc: Encoding, text: str, start: int, end: int) -> int:
    """Tokens of the long run ``text[start:end]``: its pieces' counts, summed (or sampled and scaled)."""
    pieces = -(-(end - start) // RUN_PIECE)
    if pieces <= RUN_SAMPLES:
        return sum(_exact(enc, text[i : min(i + RUN_PIECE, end)]) for i in range(start, end, RUN_PIECE))
    chosen = [start + (k * pieces // RUN_SAMPLES) * RUN_PIECE for k in range(RUN_SAMPLES)]
    sampled = sum(_exact(enc, text[i : min(i + RUN_PIECE, end)]) for i in chosen)
    return round(sampled * pieces / RUN_SAMPLES)


def _exact(enc: Encoding, text: str) -> int:
    return len(enc.encode(text, disallowed_special=())) if text else 0
