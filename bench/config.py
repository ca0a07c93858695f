"""Locating and reading the YAML configs under ``configs/`` (Hydra-compatible group layout)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from surfbench.bench.validation import closest


class ConfigError(ValueError):
    """A config file that is missing or malformed; the message names the file and the field."""


def config_dir() -> Path:
    """``$SURFBENCH_CONFIGS`` or the ``configs/`` folder of this checkout."""
    env = os.environ.get("SURFBENCH_CONFIGS")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "configs"


def group_names(group: str) -> list[str]:
    folder = config_dir() / group
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def read_group_config(group: str, name: str) -> dict[str, Any]:
    path = config_dir() / group / f"{name}.yaml"
    if not path.is_file():
        near = closest(name, group_names(group))
        tip = f"; did you mean {', '.join(near)}?" if near else ""
        raise ConfigError(f"no {group} config {name!r} ({path}){tip} known: {', '.join(group_names(group))}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


@dataclass(frozen=True)
class SurfaceConfig:
    """One entry of ``configs/surface/``: a named surface kind with its parameters."""

    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)


SURFACE_KEYS = {"name", "kind", "params", "defaults"}


def surface_config(name: str, data: dict[str, Any] | None = None) -> SurfaceConfig:
    """The surface config ``name``: from its YAML file, or ``data`` as Hydra composed it (overrides)."""
    if data is None:
        data = read_group_config("surface", name)
    unknown = set(data) - SURFACE_KEYS
    if unknown:
        raise ConfigError(
            f"configs/surface/{name}.yaml: unknown key(s) {sorted(unknown)}; allowed: {sorted(SURFACE_KEYS)}"
        )
    kind = data.get("kind")
    if not isinstance(kind, str):
        raise ConfigError(f"configs/surface/{name}.yaml: field 'kind' (the surface module) is required")
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError(f"configs/surface/{name}.yaml: field 'params' must be a mapping")
    return SurfaceConfig(name=str(data.get("name", name)), kind=kind, params=params)
