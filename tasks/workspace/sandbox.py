"""Run a command inside one episode's directory and nowhere else: bubblewrap, limits, a timeout.

Why bubblewrap (not Landlock): it isolates more than the file system. Each command gets its own
mount namespace whose root holds only ``/usr`` (read-only), ``/proc``, a minimal ``/dev``, a private
``/tmp`` and the episode directory at ``/work``; its own PID namespace (killing the sandbox kills
every process the command started, so a fork bomb or a never-ending command dies with it); no
network. Landlock restricts only file access, needs a 5.13+ kernel and bindings, and leaves process
and network isolation to us. bubblewrap is one Debian package (``apt-get install bubblewrap``).

Limits, set with ``prlimit`` on the sandbox: processes (the command runs as an unprivileged user, so
the kernel enforces it, also when surfbench runs as root), file size, address space and CPU seconds;
a wall-clock timeout kills the whole sandbox; stdout and stderr go to files outside the sandbox and
only the first ``output_cap`` bytes are read back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534  # the user a root harness drops to inside the sandbox
MOUNT = "/work"  # where the episode directory appears inside the sandbox
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces on this machine."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    output_cap: int = 16_000
    max_procs: int = 128
    max_file_bytes: int = 32 * 1024 * 1024
    max_memory_bytes: int = 2 * 1024 * 1024 * 1024
    cpu_s: int = 30


@dataclass(frozen=True)
class Result:
    exit_code: int | None
    """None when the command was killed for running out of time."""
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    seconds: float = 0.0

    def summary(self) -> str:
        """What the model sees: exit code, then output (cut where it was cut)."""
        parts = []
        if self.timed_out:
            parts.append("[killed: the command did not finish in time]")
        else:
            parts.append(f"[exit {self.exit_code}]")
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("[stderr] " + self.stderr.rstrip("\n"))
        if self.truncated:
            parts.append("[output cut]")
        return "\n".join(parts)


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _python_binds() -> list[str]:
    """Make ``python3`` available inside: /usr's own if it has one, else this interpreter's prefix."""
    if Path("/usr/bin/python3").exists() or Path("/usr/local/bin/python3").exists():
        return []
    prefix = Path(sys.base_prefix).resolve()
    if str(prefix).startswith("/usr/"):
        return []
    return ["--ro-bind", str(prefix), str(prefix)]


def _python_path_dir() -> str:
    if Path("/usr/bin/python3").exists() or Path("/usr/local/bin/python3").exists():
        return ""
    return str(Path(sys.base_prefix).resolve() / "bin") + ":"


class Sandbox:
    """Commands confined to ``root`` (mounted at /work), one bubblewrap sandbox per command."""

    def __init__(self, root: Path, limits: Limits | None = None) -> None:
        self.root = Path(root)
        self.limits = limits or Limits()
        exe = bwrap_path()
        if exe is None:
            raise SandboxUnavailable(f"the workspace suite runs commands in a bubblewrap sandbox: {INSTALL_HINT}")
        self.bwrap = exe
        self.drop_root = os.geteuid() == 0

    def prepare(self) -> None:
        """Hand the episode directory to the sandbox user (when surfbench runs as root)."""
        if not self.drop_root:
            return
        for dirpath, dirnames, filenames in os.walk(self.root):
            os.chown(dirpath, NOBODY, NOBODY)
            for name in dirnames + filenames:
                os.chown(os.path.join(dirpath, name), NOBODY, NOBODY, follow_symlinks=False)

    def argv(self, command: list[str], readonly: bool = False) -> list[str]:
        lim = self.limits
        bind = "--ro-bind" if readonly else "--bind"
        path = f"{_python_path_dir()}{MOUNT}/tools:/usr/local/bin:/usr/bin:/bin"
        inner = [
            self.bwrap,
            "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/sbin", "/sbin",
            "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64",
            *_python_binds(),
            "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
            "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
            "--proc", "/proc",
            "--dev", "/dev",
            "--tmpfs", "/tmp",
            bind, str(self.root), MOUNT,
            "--chdir", MOUNT,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--setenv", "PATH", path,
            "--setenv", "HOME", MOUNT,
            "--setenv", "LANG", "C.UTF-8",
            "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
            "--",
            *command,
        ]  # fmt: skip
        limits = [
            "prlimit",
            f"--nproc={lim.max_procs}",
            f"--fsize={lim.max_file_bytes}",
            f"--as={lim.max_memory_bytes}",
            f"--cpu={lim.cpu_s}",
            "--",
        ]
        return limits + inner

    def run(self, command: list[str], stdin: str = "", readonly: bool = False) -> Result:
        """Run ``command`` (argv) with ``stdin``; never raises for what the command does."""
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="surfbench-out-") as tmp:
            out_path, err_path = Path(tmp) / "out", Path(tmp) / "err"
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    self.argv(command, readonly),
                    stdin=subprocess.PIPE,
                    stdout=out,
                    stderr=err,
                    user=NOBODY if self.drop_root else None,
                    group=NOBODY if self.drop_root else None,
                    extra_groups=[] if self.drop_root else None,
                    start_new_session=True,
                )
                feeder = threading.Thread(target=_feed, args=(proc, stdin.encode("utf-8", "replace")), daemon=True)
                feeder.start()
                timed_out = False
                try:
                    code: int | None = proc.wait(timeout=self.limits.timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill(proc)
                    code = None
                feeder.join(timeout=1)
            stdout, cut_out = _read_capped(out_path, self.limits.output_cap)
            stderr, cut_err = _read_capped(err_path, self.limits.output_cap // 4)
        return Result(code, stdout, stderr, timed_out, cut_out or cut_err, time.perf_counter() - started)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the sandbox's whole session; its PID namespace takes every child with it."""
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _read_capped(path: Path, cap: int) -> tuple[str, bool]:
    with open(path, "rb") as fh:
        data = fh.read(cap + 1)
    cut = len(data) > cap
    return data[:cap].decode("utf-8", "replace"), cut
