"""Which MCP server to talk to: a stdio command or a streamable-HTTP URL, and how to start it.

A suite names its server in ``suite.yaml`` under ``catalog: {mcp: {...}}``; the CLI builds one from
``--mcp "COMMAND ARGS..."`` or ``--mcp-url URL``. ``{workdir}`` and ``{scenario}`` in ``args``,
``env`` values and ``cwd`` are replaced per episode (a fresh working copy of ``fixture``, and the
task's scenario), so one spec serves every episode; ``{suite}`` by the suite's folder (a path
written relative to the suite, such as a server script next to it, resolves wherever surfbench runs).
``setup`` (``file.py:function``) builds in each fresh working copy what a folder cannot hold (a git
repository's ``.git``) before the server starts. ``live_data`` names a folder the server works on
directly (``surfbench init --live-data``): no copy, its writes are real; ``surfbench check`` lists them.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT_S = 30.0
"""Default wait for the server to answer ``initialize`` (mcp-server-git needs about 2 s)."""
CALL_TIMEOUT_S = 30.0
"""Default wait for one ``tools/call`` before it becomes a ``tool_timeout`` tool error."""


class McpError(ValueError):
    """A server that cannot be used (not found, not speaking MCP, refused): one line naming the server."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        self.reason = message
        super().__init__(" ".join(f"MCP server {server!r}: {message}".splitlines()))


class McpServerDied(McpError):
    """The server process ended (or the connection closed) during an episode."""


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server: a command to start over stdio, or a URL to reach over streamable HTTP."""

    command: str | None = None
    """The executable (stdio); exactly one of ``command`` and ``url``. ``python``: the harness's own."""
    args: tuple[str, ...] = ()
    """Its arguments; ``{workdir}`` and ``{scenario}`` are filled in per episode."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment variables for the server (over PATH, HOME and the like)."""
    cwd: str | None = None
    """The server's working directory; default: the working copy of ``fixture``, else the current one."""
    url: str | None = None
    """A streamable-HTTP endpoint."""
    headers: dict[str, str] = field(default_factory=dict)
    """HTTP header name -> the environment variable holding its value (values never reach results)."""
    fixture: str | None = None
    """A folder copied to a fresh working copy per episode (``{workdir}``); relative to the suite."""
    setup: str | None = None
    """``file.py:function`` (resolved against the suite), called with each fresh working copy's path after
    ``fixture`` is copied and before the server starts: builds what a folder cannot ship (a ``.git``)."""
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    """Wait for the answer to ``initialize``."""
    call_timeout_s: float = CALL_TIMEOUT_S
    """Wait for one ``tools/call``."""
    reset_tool: str | None = None
    """A declared reset: a tool called with ``{"scenario": NAME}`` between episodes instead of starting a
    fresh server; hidden from the catalog. None: a fresh server (and working copy) per episode."""
    live_data: str | None = None
    """A folder the server works on itself, not a copy (``init --live-data``): writes change it; resolved
    against the suite. ``check`` says what its calls changed there. Not part of the identity."""
    suite_dir: str | None = None
    """What ``{suite}`` stands for: the suite's folder (set when a suite loads; None: left as written)."""
    watch: tuple[str, ...] = ()
    """The user's own data the server must never change (``init`` lists the folder it copied): hashed before
    the first episode and checked after each (bench.mcp.watch); resolved against the suite. Not in the identity."""

    @property
    def setup_name(self) -> str | None:
        """The setup hook as results name it: ``file.py:function``, without the suite's folder."""
        if not self.setup:
            return None
        head, _, attr = self.setup.rpartition(":")
        return f"{Path(head).name}:{attr}"

    @property
    def label(self) -> str:
        """How messages name the server: its command line or its URL."""
        if self.url:
            return self.url
        return shlex.join([str(self.command), *self.args])

    def identity(self) -> dict[str, Any]:
        """What results record of the server: no environment values, no header values."""
        found: dict[str, Any] = {
            "command": self.command,
            "args": list(self.args),
            "url": self.url,
            "env_names": sorted(self.env),
            "header_names": sorted(self.headers),
            "fixture": Path(self.fixture).name if self.fixture else None,  # not the checkout's path
        }
        if self.setup:  # only when set: a server without one keeps the identity it had
            found["setup"] = self.setup_name
        return found

    def filled(self, workdir: Path | None, scenario: str | None) -> tuple[list[str], dict[str, str], str | None]:
        """argv, extra env and cwd with ``{workdir}`` and ``{scenario}`` replaced."""

        def fill(text: str) -> str:
            if "{suite}" in text and self.suite_dir is not None:  # a path relative to the suite, made whole
                text = os.path.normpath(text.replace("{suite}", self.suite_dir))
            return text.replace("{workdir}", str(workdir or "")).replace("{scenario}", scenario or "default")

        program = sys.executable if self.command in ("python", "python3") else fill(str(self.command))
        argv = [program, *(fill(a) for a in self.args)]
        env = {k: fill(v) for k, v in self.env.items()}
        copy = self.fixture or self.setup  # a working copy the server is meant to run in
        cwd = fill(self.cwd) if self.cwd else (str(workdir) if workdir and copy else None)
        return argv, env, cwd


def from_command(text: str, **options: Any) -> ServerSpec:
    """``--mcp "python -m mcp_server_git --repository DIR"``: split like a shell would."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise McpError(text, f"cannot split the command line: {exc}") from None
    if not words:
        raise McpError(text, "empty command (give the server's command line, e.g. --mcp 'python -m my_server')")
    return ServerSpec(command=words[0], args=tuple(words[1:]), **options)


KEYS = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "fixture",
    "setup",
    "startup_timeout_s",
    "call_timeout_s",
    "reset_tool",
    "live_data",
    "watch",
)


def from_mapping(data: Any, where: str, folder: Path | None = None) -> ServerSpec:
    """suite.yaml's ``catalog: {mcp: {...}}``, every field checked; ``fixture`` and ``setup`` resolved.

    Both are resolved against ``folder``, and ``setup``'s function is loaded, so a wrong name is an
    error when the suite loads, not in every episode.

    Raises:
        ValueError: one line naming ``where``, the field and what to write instead.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: mcp must be a mapping (command, args, ... or url), got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in KEYS)
    if unknown:
        raise ValueError(f"{where}: mcp: unknown key {unknown[0]!r}; allowed: {', '.join(KEYS)}")
    command, url = data.get("command"), data.get("url")
    if (command is None) == (url is None):
        raise ValueError(f"{where}: mcp needs exactly one of 'command' (a stdio server) or 'url' (streamable HTTP)")
    for key in ("command", "url", "cwd", "fixture", "setup", "reset_tool", "live_data"):
        if data.get(key) is not None and (not isinstance(data[key], str) or not data[key].strip()):
            raise ValueError(f"{where}: mcp.{key} must be a non-empty string, got {data[key]!r}")
    args = data.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise ValueError(f"{where}: mcp.args must be a list of strings, got {args!r}")
    maps: dict[str, dict[str, str]] = {}
    for key in ("env", "headers"):
        value = data.get(key) or {}
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise ValueError(f"{where}: mcp.{key} must map names to strings, got {value!r}")
        maps[key] = {str(k): v for k, v in value.items()}
    times = {}
    for key in ("startup_timeout_s", "call_timeout_s"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
            raise ValueError(f"{where}: mcp.{key} must be a positive number of seconds, got {value!r}")
        if value is not None:
            times[key] = float(value)
    fixture = data.get("fixture")
    if fixture is not None and folder is not None:
        path = folder / fixture
        if not path.is_dir():
            raise ValueError(f"{where}: mcp.fixture {fixture!r}: no folder {path}")
        fixture = str(path)
    live = data.get("live_data")
    if live is not None and folder is not None:
        if not (folder / live).is_dir():
            raise ValueError(f"{where}: mcp.live_data {live!r}: no folder {folder / live}")
        live = str((folder / live).resolve())
    watch = data.get("watch") or []
    if not isinstance(watch, list) or not all(isinstance(w, str) and w.strip() for w in watch):
        raise ValueError(f"{where}: mcp.watch must be a list of paths (the data the server must not change)")
    watched = tuple(str((folder / w).resolve()) if folder is not None else w for w in watch)
    setup = _setup(data.get("setup"), where, folder)
    cwd = data.get("cwd")
    if cwd is not None and folder is not None and not cwd.startswith("{") and (folder / cwd).is_dir():
        cwd = str(folder / cwd)
    return ServerSpec(
        command=command,
        args=tuple(str(a) for a in args),
        env=maps["env"],
        cwd=cwd,
        url=url,
        headers=maps["headers"],
        fixture=fixture,
        setup=setup,
        reset_tool=data.get("reset_tool"),
        live_data=live,
        suite_dir=str(folder.resolve()) if folder is not None else None,
        watch=watched,
        **times,
    )


def _setup(value: str | None, where: str, folder: Path | None) -> str | None:
    """``mcp.setup``: ``file.py:function``; with ``folder``, the file resolved and the function loaded."""
    if value is None:
        return None
    head, sep, attr = value.rpartition(":")
    if not sep or not head.endswith(".py") or not attr.isidentifier():
        raise ValueError(f"{where}: mcp.setup must be 'file.py:function' (called with the working copy), got {value!r}")
    if folder is None:
        return value
    path = folder / head
    if not path.is_file():
        raise ValueError(f"{where}: mcp.setup {value!r}: no file {path}")
    load_setup(f"{path}:{attr}", where)
    return f"{path}:{attr}"


def load_setup(spec: str, where: str = "mcp") -> Any:
    """The setup function ``spec`` names (``path.py:function``); ValueError naming ``mcp.setup`` otherwise."""
    from surfbench.bench.suites.hooks import load_hook

    return load_hook(spec, where, "mcp.setup")


def catalog_mapping(value: Any, where: str) -> dict[str, Any] | None:
    """suite.yaml's ``catalog`` when it is a mapping ``{mcp: {...}, pinned: FILE}``; None when it is not one.

    Raises:
        ValueError: a mapping with other keys, without ``mcp``, or a ``pinned`` that is not a file name.
    """
    if not isinstance(value, Mapping):
        return None
    unknown = sorted(str(k) for k in value if k not in ("mcp", "pinned"))
    if unknown or "mcp" not in value:
        raise ValueError(
            f"{where}: catalog as a mapping takes 'mcp' (the live server: command, args, ... or url) and "
            "optionally 'pinned' (a tools/list dump to compare against)"
            + (f"; unknown key {unknown[0]!r}" if unknown else "")
        )
    pinned = value.get("pinned")
    if pinned is not None and (not isinstance(pinned, str) or not pinned.strip()):
        raise ValueError(f"{where}: catalog.pinned must be a file name (a tools/list dump), got {pinned!r}")
    from_mapping(value["mcp"], where)  # the server's fields, checked now (the fixture against its folder later)
    return dict(value)
