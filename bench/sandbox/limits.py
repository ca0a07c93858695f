"""What a workspace command may use (:class:`Limits`) and what came of running it (:class:`Result`).

Plain records, apart from the sandbox that enforces them (:mod:`surfbench.bench.sandbox.box`,
which re-exports both): the backend and the surfaces read them without touching bubblewrap.
"""

from __future__ import annotations

from dataclasses import dataclass

MB = 1024 * 1024
DISK_QUOTA_EXCEEDED, MEMORY_EXCEEDED = "disk_quota_exceeded", "memory_exceeded"
"""The error types a command gets when it runs into the disk quota or the memory cap."""


@dataclass(frozen=True)
class Limits:
    """What one command, and one episode, may use; every workspace surface runs under the same ones."""

    timeout_s: float = 10.0
    output_cap: int = 16_000
    max_procs: int = 128
    max_file_bytes: int = 32 * MB
    max_memory_bytes: int = 2048 * MB
    """Address space of each process."""
    cpu_s: int = 30
    disk_quota_bytes: int = 256 * MB
    """The episode directory, and each command's /tmp; 0: no quota (a directory on the host disk)."""
    memory_cap_bytes: int = 2048 * MB
    """All processes of one command together; 0: only the per-process limits."""


@dataclass(frozen=True)
class Result:
    """What came of one command: its exit, its output (as far as it was read back) and any limit it hit."""

    exit_code: int | None
    """None when the command was killed for running out of time."""
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    seconds: float = 0.0
    error_type: str | None = None
    """``disk_quota_exceeded`` or ``memory_exceeded`` when the command ran into that limit."""
    note: str = ""
    """What the model is told about that limit (on the first line, which the command cannot write)."""
    memory_peak_bytes: int | None = None
    """All the command's processes together, where a cgroup measured it."""

    def summary(self) -> str:
        """What the model sees: exit code (and a limit it hit), then output (cut where it was cut)."""
        head = "[killed: the command did not finish in time]" if self.timed_out else f"[exit {self.exit_code}]"
        parts = [f"{head} [{self.note}]" if self.note else head]
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("[stderr] " + self.stderr.rstrip("\n"))
        if self.truncated:
            parts.append("[output cut]")
        return "\n".join(parts)


def limit_note(limits: Limits, error_type: str) -> str:
    """What the model is told about the limit a command ran into (``Result.note``)."""
    if error_type == MEMORY_EXCEEDED:
        return f"memory limit: the command's processes may use {limits.memory_cap_bytes // MB} MB"
    mb = limits.disk_quota_bytes // MB
    return f"disk quota: the workspace holds at most {mb} MB, /tmp {mb} MB per command"
