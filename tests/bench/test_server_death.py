"""A local server that dies of SIGILL says why and what to do.

A llama.cpp build for instructions the CPU reports but its virtual machine traps (AMX tiles) dies on its
first request; the user saw only "connection refused". The restart message names the signal and the rebuild.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from surfbench.bench.models.server import LocalServer, ServerSettings


def ended_by(code: str, tmp_path: Path) -> LocalServer:
    server = LocalServer(ServerSettings(tmp_path / "m.gguf", "x"))
    server.proc = subprocess.Popen([sys.executable, "-c", code])
    server.proc.wait(timeout=30)
    return server


def test_a_server_killed_by_sigill_names_the_signal_and_the_rebuild(tmp_path: Path):
    server = ended_by("import os, signal; os.kill(os.getpid(), signal.SIGILL)", tmp_path)
    assert not server.alive()
    how = server.death()
    assert "SIGILL" in how and "pip cache remove llama_cpp_python" in how and "make setup" in how


def test_another_ending_is_its_exit_code_alone(tmp_path: Path):
    assert ended_by("raise SystemExit(3)", tmp_path).death() == "exit code 3"
