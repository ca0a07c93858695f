"""End-to-end tests need a pulled local model and its engine (llama.cpp's server; llama-cpp-python for its tests).

Locally they are skipped with the reason when either is missing; under CI (``CI=true``, where
``make test`` installs and pulls both) a missing piece is a failure, not a skip.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from surfbench.bench.models import model_config
from surfbench.bench.models.local import DEFAULT_MODEL, is_pulled
from surfbench.bench.models.server import ServerError, upstream_binary


def require_local_model(name: str = DEFAULT_MODEL, engine: str | None = None) -> None:
    """Skip (fail under CI) unless ``name`` is pulled and ``engine`` (default: its config's) is installed."""
    missing = []
    engine = engine or model_config(name).server
    if engine == "llama-cpp-python" and importlib.util.find_spec("llama_cpp") is None:
        missing.append("llama-cpp-python is not installed (make setup builds it)")
    if engine == "llama-server":
        try:
            upstream_binary()
        except ServerError as exc:
            missing.append(str(exc))
    if not is_pulled(name):
        missing.append(f"model {name} is not pulled (surfbench models pull {name})")
    if missing:
        if os.environ.get("CI"):
            pytest.fail("; ".join(missing))
        pytest.skip("; ".join(missing))


@pytest.fixture(autouse=True)
def _real_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """E2E tests use the real model cache (the models live there), not the per-test cache."""
    monkeypatch.delenv("SURFBENCH_CACHE", raising=False)
    if os.environ.get("SURFBENCH_MODEL_CACHE"):
        monkeypatch.setenv("SURFBENCH_CACHE", os.environ["SURFBENCH_MODEL_CACHE"])
