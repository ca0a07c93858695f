"""Locating and reading the YAML configs under ``configs/`` (Hydra-compatible group layout)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from surfbench.bench.base.validation import closest


class ConfigError(ValueError):
    """A config file that is missing or malformed; the message names the file and the field."""


SHIPPED_CONFIGS = Path(__file__).resolve().parents[2] / "configs"
"""The ``configs/`` folder of this checkout (or installed package)."""


def config_dirs() -> list[Path]:
    """Folders searched for configs, first wins: ``$SURFBENCH_CONFIGS`` (``:``-separated), then the shipped ones.

    A file in a user's folder overrides the shipped file of the same group and name; the groups merge
    (a folder holding only ``suite/mine.yaml`` adds a suite and keeps every shipped config).
    """
    extra = [Path(p) for p in os.environ.get("SURFBENCH_CONFIGS", "").split(os.pathsep) if p]
    for folder in extra:
        if not folder.is_dir():  # a typo would otherwise leave the shipped configs alone, silently
            raise ConfigError(f"SURFBENCH_CONFIGS: {folder} is not a folder (folders of configs, ':'-separated)")
    shipped = SHIPPED_CONFIGS.resolve()
    return [*dict.fromkeys(p for p in extra if p.resolve() != shipped), SHIPPED_CONFIGS]


def find_config(relative: str) -> Path | None:
    """The first ``folder/relative`` of :func:`config_dirs` that is a file, or None."""
    return next((d / relative for d in config_dirs() if (d / relative).is_file()), None)


def config_dir() -> Path:
    """The folder of the primary ``config.yaml``: the first of :func:`config_dirs` that holds one."""
    found = find_config("config.yaml")
    return found.parent if found is not None else SHIPPED_CONFIGS


def group_names(group: str) -> list[str]:
    """Every config name of ``group`` over all config folders, sorted."""
    names = {p.stem for d in config_dirs() if (d / group).is_dir() for p in (d / group).glob("*.yaml")}
    return sorted(names)


def unknown_config(group: str, name: str, known: list[str] | None = None) -> str:
    """One line for ``group=name`` naming no config: the close names, or every name when none is close.

    What ``surfbench run suite=/surface=/model=NAME`` prints in place of Hydra's many-line option list.
    """
    names = sorted(known if known is not None else group_names(group))
    near = closest(name, names)
    hint = f"did you mean {', '.join(near)}?" if near else f"known: {', '.join(names) or 'none'}"
    found = f"{group}={name}: no {group} config of that name; {hint} (configs/{group}/*.yaml)"
    if group == "suite":  # a suite of one's own: both folders must be named (surfbench init writes the config)
        configs = os.environ.get("SURFBENCH_CONFIGS") or "not set"
        suites = os.environ.get("SURFBENCH_SUITES") or "not set"
        found += (
            f"; a suite of your own needs SURFBENCH_CONFIGS=DIR/configs (holding suite/{name}.yaml, which "
            f"surfbench init writes; now {configs}) and SURFBENCH_SUITES=the folder holding DIR (now {suites})"
        )
    return found


def read_group_config(group: str, name: str) -> dict[str, Any]:
    """The mapping in ``<group>/<name>.yaml`` of the first config folder that has it; ConfigError otherwise."""
    path = find_config(f"{group}/{name}.yaml")
    if path is None:
        near = closest(name, group_names(group))
        tip = f"; did you mean {', '.join(near)}?" if near else ""
        where = ", ".join(str(d / group) for d in config_dirs())
        raise ConfigError(f"no {group} config {name!r} (in {where}){tip} known: {', '.join(group_names(group))}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def overlay_configs(dest: Path) -> Path:
    """``dest`` filled with one link per YAML file of :func:`config_dirs`, the first folder's winning.

    Hydra reads one primary config folder and gives its own folder precedence over any added search
    path; this merged view is the folder it reads when ``SURFBENCH_CONFIGS`` adds folders.
    """
    for folder in reversed(config_dirs()):  # later folders first: earlier ones replace their links
        for path in sorted(folder.rglob("*.yaml")) if folder.is_dir() else []:
            target = dest / path.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.exists():
                target.unlink()
            target.symlink_to(path.resolve())
    return dest


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


def shown(value: object) -> str:
    """A value as it would be written in an override (``null``, ``true``, ``abc``), for messages."""
    from omegaconf import OmegaConf

    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value, resolve=False)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, list | dict):
        return json.dumps(value, default=str)
    return str(value)
