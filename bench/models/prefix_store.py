"""A local server's computed prompt prefix kept on disk across sessions (``keep_prefix: true``, llama-server).

The first request of a fresh llama-server computes its whole prompt: for ``full`` on the forge that is a
10,184-token tool block, 24 minutes at 1.5B on 2 cores, paid again by every session that resumes a run. The
server can write a slot's KV cache to a file and read it back (``--slot-save-path``, ``POST
/slots/0?action=save|restore``); restored, the next request reuses the longest common prefix of the restored
tokens and its own prompt, exactly as it reuses the previous request's within a session.

:class:`PrefixStore` does that around the client's calls: before the first request a server answers, it restores
the file saved for the request's stable part (model, tools, system message) if there is one; after a request whose
stable part is shared (a second task sent it: ``full``'s, ``core``'s tool block, not ``preselect``'s, which is
the task's own), that was at least :data:`MIN_PROMPT` tokens long, and has no file yet, it saves the slot. A
failed save or restore is reported once and the run goes on (it only costs time). One slot only: with
``slots`` > 1 or ``n_parallel`` > 1 which slot holds which prefix is the server's business, and this is not used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import cast

MIN_PROMPT = 1024
"""Prompt tokens a request must have for its slot to be worth saving."""
SUFFIX = ".slot"
KEEP_FILES = 6
"""Files kept per model's folder, the most recently saved or restored: a run's surfaces with a shared prefix
(``full``, ``core``, ``dispatcher`` and a few more) fit, and the folder stays bounded (a 10k-token forge prefix is 126
MB at 0.5B, about 290 MB at 1.5B); an older file is deleted when a new one is saved."""

Post = Callable[[str, Mapping[str, object], float], Mapping[str, object]]
"""``post(url, body, timeout_s)``: the server's JSON answer, or an exception."""


def _post(url: str, body: Mapping[str, object], timeout_s: float) -> Mapping[str, object]:
    import httpx

    response = httpx.post(url, json=body, timeout=timeout_s)
    response.raise_for_status()
    answer: dict[str, object] = response.json()
    return answer


def _task(payload: Mapping[str, object]) -> str:
    """The request's first user message: which task's conversation it is."""
    messages = cast(Iterable[object], payload.get("messages") or [])
    first = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), {})
    return hashlib.sha256(json.dumps(first.get("content"), ensure_ascii=False).encode("utf-8")).hexdigest()


def prefix_key(model_identity: str, payload: Mapping[str, object]) -> str:
    """The file name for a request's stable part: the model, the tools, the system message (not the task)."""
    messages = cast(Sequence[object], payload.get("messages") or [])
    system = [m for m in messages[:1] if isinstance(m, dict) and m.get("role") == "system"]
    text = json.dumps([model_identity, payload.get("tools"), system], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24] + SUFFIX


class PrefixStore:
    """Save and restore llama-server's slot 0 under ``folder`` (the server's ``--slot-save-path``)."""

    def __init__(self, folder: Path, model_identity: str, post: Post = _post, log: Callable[[str], None] | None = None):
        self.folder = folder
        self.model_identity = model_identity
        self._post = post
        self._log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self._restored_for: str | None = None
        """The api_base of the server already offered a file (each new server once)."""
        self._failed = False
        self._tasks: dict[str, set[str]] = {}
        """Per file name, the tasks whose requests had that stable part (saved once two tasks share it)."""

    def _url(self, api_base: str, action: str) -> str:
        root = api_base.removesuffix("/").removesuffix("/v1")
        return f"{root}/slots/0?action={action}"

    def before(self, api_base: str, payload: Mapping[str, object]) -> None:
        """Before a request: on a server not yet offered one, restore the file saved for this request's prefix."""
        if self._restored_for == api_base or self._failed:
            return
        self._restored_for = api_base
        name = prefix_key(self.model_identity, payload)
        if not (self.folder / name).is_file():
            return
        t0 = time.monotonic()
        with contextlib.suppress(OSError):  # used, before the server opens it: the last to go when a save prunes
            os.utime(self.folder / name)
        try:
            answer = self._post(self._url(api_base, "restore"), {"filename": name}, 600.0)
        except Exception as exc:  # only time is lost: the request computes its prompt as without a file
            if not (self.folder / name).is_file():
                return  # pruned by another process meanwhile: not this server's fault, keep_prefix stays on
            (self.folder / name).unlink(missing_ok=True)  # a file cut short by a killed save is never tried again
            self._fail(f"could not restore the saved prompt prefix {name}, deleted ({exc})")
            return
        tokens = answer.get("n_restored")
        self._log(
            f"surfbench: restored a saved prompt prefix ({tokens if tokens is not None else '?'} tokens) in "
            f"{time.monotonic() - t0:.1f} s: {self.folder / name}"
        )

    def after(self, api_base: str, payload: Mapping[str, object], prompt_tokens: int | None) -> None:
        """After a request of ``prompt_tokens``: save the slot if its stable part is shared, long and not saved."""
        if self._failed:
            return
        name = prefix_key(self.model_identity, payload)
        tasks = self._tasks.setdefault(name, set())
        tasks.add(_task(payload))
        if len(tasks) < 2 or prompt_tokens is None or prompt_tokens < MIN_PROMPT or (self.folder / name).is_file():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._post(self._url(api_base, "save"), {"filename": name}, 600.0)
        except Exception as exc:
            self._fail(f"could not save the prompt prefix to {self.folder / name} ({exc})")
            return
        prune(self.folder, KEEP_FILES)

    def _fail(self, message: str) -> None:
        self._failed = True  # once: a server that cannot save or restore will not learn to in this run
        self._log(f"surfbench: warning: {message}; keep_prefix is off for the rest of this run")


def prune(folder: Path, keep: int) -> list[Path]:
    """Delete all but the ``keep`` most recently used saved prefixes in ``folder``; return those deleted."""
    files = []
    for path in folder.glob(f"*{SUFFIX}"):
        with contextlib.suppress(OSError):  # gone meanwhile (another process pruned it)
            files.append((path.stat().st_mtime, path))
    files.sort(reverse=True)
    gone = []
    for _, path in files[keep:]:
        with contextlib.suppress(OSError):
            path.unlink()
            gone.append(path)
    return gone
