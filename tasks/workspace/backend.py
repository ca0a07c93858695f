"""The workspace backend: a scratch directory per episode and real commands run in a sandbox.

Each episode gets a fresh copy of ``files/`` (a small code project, logs, CSV files and a ``tools/``
directory of named scripts). Its five ``@operation`` methods are the canonical operations every
workspace surface routes to; their signatures and docstrings are the catalog, as in forge:

- ``run_steps``: independent commands, each inline code, a named tool, or a parallel fan-out group;
- ``run_pipe``: a pipeline, stdout of each stage on the next stage's stdin;
- ``read_file`` / ``write_file`` / ``edit_file``: structured file I/O.

Every command, file operations included, runs inside :class:`~surfbench.bench.sandbox.Sandbox`, so a
path or symlink can never reach outside the episode directory. ``state()`` reads the directory
without following symlinks, and reports what the episode used (``usage``: peak disk and memory).

A command that runs into the disk quota or the memory cap goes on like any failed command (the model
sees the error and a note); its log entry, ``last_error_type`` (for the call that ran it) and the
note in the result carry ``disk_quota_exceeded`` / ``memory_exceeded``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pydantic import Field

from surfbench.bench.contracts.backend import OperationBackend, ToolError, operation
from surfbench.bench.sandbox import MB, Limits, Result, Sandbox

FILES = Path(__file__).resolve().parent / "files"
STATE_FILE_BYTES = 20_000  # state() keeps text files up to this size
MAX_STEPS = 16  # commands per call (parallel members included)


class Step(TypedDict, total=False):
    """One command: ``code`` (inline bash), or ``tool`` with ``args`` (a script in tools/), or ``parallel``."""

    code: str
    tool: str
    args: list[str]
    stdin: str
    parallel: list[dict]


def named_tools(root: Path = FILES) -> list[str]:
    return sorted(p.name for p in (root / "tools").iterdir() if p.is_file() and not p.name.startswith("."))


def tool_usage(root: Path = FILES) -> dict[str, str]:
    """Each named tool's one-line usage (the docstring line of the script)."""
    usage = {}
    for name in named_tools(root):
        text = (root / "tools" / name).read_text(encoding="utf-8")
        line = next((ln.strip().strip('"') for ln in text.splitlines() if ln.startswith('"""')), name)
        usage[name] = line
    return usage


class WorkspaceBackend(OperationBackend):
    """One episode directory; commands confined to it."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        disk_quota_mb: Annotated[int, Field(ge=0)] | None = None,
        memory_mb: Annotated[int, Field(ge=0)] | None = None,
    ) -> None:
        """``disk_quota_mb`` / ``memory_mb`` (suite options; 0 turns one off) override ``limits``."""
        super().__init__()
        limits = limits or Limits()
        if disk_quota_mb is not None:
            limits = replace(limits, disk_quota_bytes=int(disk_quota_mb) * MB)
        if memory_mb is not None:
            limits = replace(limits, memory_cap_bytes=int(memory_mb) * MB)
        self.limits = limits
        self.root: Path | None = None
        self.sandbox: Sandbox | None = None
        self.log: list[dict[str, Any]] = []
        self.last_error_type: str | None = None
        """The limit the last ``call`` ran into (``disk_quota_exceeded``, ``memory_exceeded``) or None."""

    # -- lifecycle ------------------------------------------------------------------------------
    def reset(self, scenario: str | None = None) -> None:
        if scenario not in (None, "default"):
            raise ValueError(f"workspace: unknown scenario {scenario!r} (only 'default')")
        self.close()
        self.sandbox = Sandbox(self.limits, seed=FILES)
        self.root = self.sandbox.root
        self.log = []
        self.last_error_type = None

    def close(self) -> None:
        """Free the episode directory now (garbage collection does it otherwise)."""
        if self.sandbox is not None:
            self.sandbox.close()

    def call(self, op: str, args: Mapping[str, Any]) -> Any:
        self.last_error_type = None
        return super().call(op, args)

    def _box(self) -> Sandbox:
        if self.sandbox is None:
            raise RuntimeError("workspace backend used before reset()")
        return self.sandbox

    def state(self) -> dict[str, Any]:
        """``files``: path -> text (regular files up to a size; symlinks as '-> target'); ``commands``; ``usage``."""
        assert self.root is not None and self.sandbox is not None
        files: dict[str, Any] = {}
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            for name in sorted(dirnames + filenames):
                full = Path(dirpath) / name
                rel = str(full.relative_to(self.root))
                info = full.lstat()
                if stat.S_ISLNK(info.st_mode):
                    files[rel] = f"-> {os.readlink(full)}"
                elif stat.S_ISREG(info.st_mode):
                    files[rel] = _read_regular(full, info.st_size)
        return {"files": files, "commands": list(self.log), "usage": self.usage()}

    def usage(self) -> dict[str, Any]:
        """What the episode used against its limits (peaks sampled while commands ran; None: not measured)."""
        box = self._box()
        return {
            "disk_peak_bytes": box.peak_disk_bytes,
            "disk_used_bytes": box.disk_used(),
            "disk_quota_bytes": self.limits.disk_quota_bytes,
            "memory_peak_bytes": box.peak_memory_bytes,
            "memory_cap_bytes": self.limits.memory_cap_bytes,
            "memory_mechanism": box.cap.mechanism if self.limits.memory_cap_bytes else None,
        }

    # -- execution ------------------------------------------------------------------------------
    def _check_tool(self, name: str) -> None:
        assert self.root is not None
        tools = named_tools(self.root)
        if name not in tools:
            raise ToolError(f"no named tool {name!r} in tools/; available: {', '.join(tools)}")

    def _argv(self, step: dict[str, Any]) -> list[str]:
        if "code" in step:
            return ["bash", "-c", str(step["code"])]
        self._check_tool(str(step["tool"]))
        args = step.get("args") or []
        if not isinstance(args, list):
            raise ToolError("'args' must be a list of strings")
        return [str(step["tool"]), *(str(a) for a in args)]

    def _shape(self, step: Any, where: str) -> dict[str, Any]:
        if not isinstance(step, dict):
            raise ToolError(f"{where}: expected an object with 'code', 'tool' or 'parallel'")
        kinds = [k for k in ("code", "tool", "parallel") if k in step]
        if len(kinds) != 1:
            got = " and ".join(kinds) or "none of them"
            raise ToolError(f"{where}: give exactly one of 'code', 'tool' or 'parallel' (got {got})")
        return step

    def _cat(self, path: str) -> Result:
        """A file's text, read inside the sandbox (so no path or symlink reaches outside)."""
        r = self._run(["cat", "--", path], readonly=True)
        if r.exit_code != 0:
            raise ToolError(_why(r) or f"cannot read {path}")
        return r

    def _count(self, steps: list[Any]) -> int:
        return sum(len(s.get("parallel") or []) if isinstance(s, dict) and "parallel" in s else 1 for s in steps)

    def _run(self, argv: list[str], stdin: str = "", readonly: bool = False) -> Result:
        """Every command goes through here: the first limit one runs into is the call's error type."""
        result = self._box().run(argv, stdin=stdin, readonly=readonly)
        self.last_error_type = self.last_error_type or result.error_type
        return result

    def _run_one(self, step: dict[str, Any], stdin: str, readonly: bool, where: str) -> Result:
        result = self._run(self._argv(step), stdin=stdin, readonly=readonly)
        self.log.append(
            {
                "where": where,
                "code": step.get("code"),
                "tool": step.get("tool"),
                "args": step.get("args"),
                "exit": result.exit_code,
                "timed_out": result.timed_out,
                "error_type": result.error_type,
            }
        )
        return result

    def _run_group(self, group: list[Any], stdin: str, readonly: bool, where: str) -> list[Result]:
        members = [self._shape(m, f"{where}.parallel[{i}]") for i, m in enumerate(group)]
        for i, m in enumerate(members):
            if "parallel" in m:
                raise ToolError(f"{where}.parallel[{i}]: parallel groups do not nest")
        with ThreadPoolExecutor(max_workers=min(4, len(members) or 1)) as pool:
            futures = [
                pool.submit(self._run_one, m, str(m.get("stdin", stdin)), readonly, f"{where}.parallel[{i}]")
                for i, m in enumerate(members)
            ]
            return [f.result() for f in futures]

    @operation("execution", 40.0)
    def run_steps(self, steps: list[Step], readonly: bool = False) -> str:
        """Run independent commands in the workspace, one after another; each gets its own output.

        Args:
            steps: Commands. Each is {"code": "<bash>"}, or {"tool": "<name in tools/>", "args": [...]},
                or {"parallel": [<command>, ...]} to run a group at once; a command may carry "stdin".
            readonly: Mount the workspace read-only for these commands.
        """
        if not steps:
            raise ToolError("'steps' is empty: give at least one command")
        if self._count(steps) > MAX_STEPS:
            raise ToolError(f"at most {MAX_STEPS} commands per call")
        out = []
        for i, raw in enumerate(steps):
            step = self._shape(raw, f"steps[{i}]")
            if "parallel" in step:
                results = self._run_group(step["parallel"] or [], "", readonly, f"steps[{i}]")
                out += [f"--- steps[{i}].parallel[{j}] {r.summary()}" for j, r in enumerate(results)]
            else:
                r = self._run_one(step, str(step.get("stdin", "")), readonly, f"steps[{i}]")
                out.append(r.summary() if len(steps) == 1 else f"--- steps[{i}] {r.summary()}")
        return "\n".join(out)

    @operation("execution", 20.0)
    def run_pipe(self, stages: list[Step], stdin: str = "", readonly: bool = False) -> str:
        """Run a pipeline: the stdout of each stage is the stdin of the next; returns the last stage's output.

        Args:
            stages: Stages in order, each like a command of run_steps ({"code"}, {"tool", "args"} or
                {"parallel"}; a parallel stage's members all read the same input and their outputs are joined).
            stdin: Input for the first stage.
            readonly: Mount the workspace read-only for these commands.
        """
        if not stages:
            raise ToolError("'stages' is empty: give at least one stage")
        if self._count(stages) > MAX_STEPS:
            raise ToolError(f"at most {MAX_STEPS} commands per call")
        data = stdin
        last: Result | None = None
        for i, raw in enumerate(stages):
            stage = self._shape(raw, f"stages[{i}]")
            if "parallel" in stage:
                results = self._run_group(stage["parallel"] or [], data, readonly, f"stages[{i}]")
                failed = next((r for r in results if r.exit_code != 0), None)
                joined = "".join(r.stdout for r in results)
                last = failed or Result(0, joined, "", False, any(r.truncated for r in results))
            else:
                last = self._run_one(stage, data, readonly, f"stages[{i}]")
            if last.exit_code != 0:
                return f"stage {i} failed: {last.summary()}"
            data = last.stdout
        assert last is not None
        return last.summary()

    @operation("files", 15.0, read_only=True)
    def read_file(self, path: str, offset: int = 1, limit: int = 200) -> str:
        """Read a text file of the workspace with line numbers.

        Args:
            path: Path relative to the workspace root (e.g. project/calc.py).
            offset: First line to show (1-based).
            limit: Most lines to show.
        """
        lines = self._cat(path).stdout.splitlines()
        start = max(offset, 1)
        shown = lines[start - 1 : start - 1 + max(limit, 1)]
        body = "\n".join(f"{n:>5}\t{line}" for n, line in enumerate(shown, start))
        more = len(lines) - (start - 1 + len(shown))
        return body + (f"\n... {more} more line(s)" if more > 0 else "")

    @operation("files", 15.0)
    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a file in the workspace (parent directories are created).

        Args:
            path: Path relative to the workspace root.
            content: The whole new content of the file.
        """
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        r = self._run(["bash", "-c", script, "write_file", path], stdin=content)
        if r.exit_code != 0:
            raise ToolError(_why(r) or f"cannot write {path}")
        return f"wrote {len(content.encode())} bytes to {path}"

    @operation("files", 10.0)
    def edit_file(self, path: str, old_string: str, new_string: str) -> str:
        """Replace one exact occurrence of old_string with new_string in a file.

        Args:
            path: Path relative to the workspace root.
            old_string: Text to replace; must occur exactly once in the file.
            new_string: Replacement text.
        """
        r = self._cat(path)
        if r.truncated:
            raise ToolError(f"{path} is too large to edit here")
        count = r.stdout.count(old_string) if old_string else 0
        if count != 1:
            why = "is empty" if not old_string else f"occurs {count} times (it must occur exactly once)"
            raise ToolError(f"old_string {why} in {path}")
        self.write_file(path, r.stdout.replace(old_string, new_string, 1))
        return f"edited {path}"


def _why(r: Result) -> str:
    """A failed file operation's error, with the limit it ran into first (as a command's summary has it)."""
    return f"[{r.note}] {r.stderr.strip()}" if r.note else r.stderr.strip()


def _read_regular(path: Path, size: int) -> str:
    if size > STATE_FILE_BYTES:
        return f"<{size} bytes>"
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(STATE_FILE_BYTES + 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{size} bytes, binary>"
