"""Shared by the MCP tests: a temp git repository, the tiny server's command line, and a leak check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TINY = Path(__file__).resolve().parent.parent / "fixtures" / "mcp_servers" / "tiny_server.py"


def tiny(mode: str = "ok") -> str:
    """The command line of the tiny test server in ``mode``."""
    return f"{sys.executable} {TINY} {mode}"


def git_repo(path: Path) -> Path:
    """A small git repository with one commit."""
    path.mkdir(parents=True, exist_ok=True)
    run = {"cwd": path, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", "-b", "main"], **run)  # type: ignore[call-overload]
    (path / "a.txt").write_text("hello\n")
    subprocess.run(["git", "add", "a.txt"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "first"], **run)  # type: ignore[call-overload]
    return path


def processes_with(text: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            found.append(int(entry.name))
    return found


def server_pid(guard_pid: int) -> int | None:
    """The host pid of the server below the guard ``guard_pid`` (below its init, with the PID namespace).

    The server cannot tell it: in the namespace its /proc is its own, where it is pid 2.
    """
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    todo = list(children.get(guard_pid, []))
    while todo:
        pid = todo.pop(0)
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"guard.py" not in cmd:
            return pid
        todo += children.get(pid, [])
    return None
