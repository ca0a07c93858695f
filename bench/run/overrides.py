"""The top-level settings of ``surfbench run``, checked strictly before anything is written.

Hydra parses an override's value by its look (``limit=1.5`` is a float, ``no_cache=maybe`` a string,
``tasks=read-note`` a string) and ``+key=value`` adds any key at all. Taken as they come, such values
run a different experiment than the one asked for (``int(1.5)`` tasks, ``bool("maybe")``, a typo'd
key ignored). Each setting here is accepted only in the form ``configs/config.yaml`` documents;
anything else is a :class:`~bench.base.config.ConfigError` naming the override, which ``surfbench run``
prints as one line (exit code 2) before the run folder exists. The numbers' ranges are one table
(:data:`WHOLE_SETTINGS`), which a :class:`~surfbench.bench.run.cell.CellSpec` made in Python is checked against too,
and a ``run`` name is checked here (:func:`run_name_problem`) for the command line's guards and every cell's plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from surfbench.bench.base.concurrency import MAX_CONCURRENCY
from surfbench.bench.base.config import ConfigError, config_dir, shown

SPLITS = ("dev", "test", "synth", "all")  # synth: the tasks `surfbench synth` made (bench/suites/suite_model.py)
MODES = ("native", "prompted")
ORDERS = ("cache", "naive")
PROGRESS = ("auto", "live", "plain")


@dataclass(frozen=True)
class RunSettings:
    """The checked top-level settings of one ``surfbench run`` job (the cell's suite/surface/model aside)."""

    split: str
    tasks: tuple[str, ...]
    limit: int | None
    repeats: int
    mode: str | None
    max_steps: int | None
    order: str
    episode_retries: int
    retry_errors: bool
    stop_on_repeat: int | None
    no_cache: bool
    progress: str
    run: str | None
    tags: tuple[str, ...] = ()
    """Only the tasks carrying every one of these tags (``tags=hot``, ``tags=[hot,single]``); (): no filter."""
    concurrency: int | None = None
    """Episodes of a cell in flight at once; None: the model config's ``concurrency``."""
    until_decided: str | None = None
    """A gate criteria file: run the cells paired, batch by batch, until its sequential criteria are decided."""
    budget: int | None = None
    """With ``until_decided``: task pairs per comparison at most (None: every selected task)."""
    batch: int = 10
    """With ``until_decided``: tasks per batch (the criteria are tested after each)."""
    order_seed: int = 0
    """With ``until_decided``: the seed of the tasks' random order."""


def known_settings() -> tuple[list[str], list[str]]:
    """(settings, config groups) that ``configs/config.yaml`` defines, read from the file itself.

    Read rather than listed here so that a setting added to the file is known at once.
    """
    path = config_dir() / "config.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})".replace("\n", " ")) from None
    groups = []
    for entry in data.get("defaults") or []:
        if isinstance(entry, dict):
            groups += [str(k) for k in entry if not str(k).startswith(("override ", "hydra"))]
    settings = sorted(str(k) for k in data if k not in ("defaults", "hydra"))
    return settings, sorted(groups)


def check_keys(cfg: Any) -> None:
    """Refuse a top-level key that config.yaml does not define (``+foo=1``, a preset's typo)."""
    settings, groups = known_settings()
    for key in cfg:
        if str(key) in settings or str(key) in groups or str(key) == "hydra":
            continue
        raise ConfigError(
            f"+{key}={shown(cfg.get(key))}: unknown setting {str(key)!r}; the settings are "
            f"{', '.join(settings)} (and the groups {', '.join(groups)})"
        )


@dataclass(frozen=True)
class Whole:
    """A whole-number setting's range: ``least`` to ``most``; ``null``: what null means (None: null refused)."""

    least: int
    null: str | None = None
    most: int | None = None


WHOLE_SETTINGS = {
    "limit": Whole(1, "every task"),
    "repeats": Whole(1),
    "max_steps": Whole(1, "the suite's"),
    "episode_retries": Whole(0),
    "concurrency": Whole(1, "the model config's", MAX_CONCURRENCY),
    "budget": Whole(1, "every selected task"),
    "batch": Whole(1),
    "order_seed": Whole(0),
}
"""Every whole-number setting and its range: the one place a run's numbers are checked, whether they come from
Hydra's composition (:func:`run_settings`) or a :class:`~surfbench.bench.run.cell.CellSpec` made in Python."""


def check_whole(key: str, value: object) -> int | None:
    """``value`` of the whole-number setting ``key`` (:data:`WHOLE_SETTINGS`), or a ConfigError naming it."""
    if value is None and WHOLE_SETTINGS[key].null is not None:
        return None
    return _whole_number(key, value)


def _whole_number(key: str, value: object) -> int:
    """``value`` as a whole number in ``key``'s range; anything else (null too) a ConfigError naming it."""
    bound = WHOLE_SETTINGS[key]
    # bool is an int in Python: `repeats=true` must not mean one repeat
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= bound.least
        and (bound.most is None or value <= bound.most)
    ):
        return int(value)
    tail = f", or null ({bound.null})" if bound.null is not None else ""
    span = "" if bound.most is None else f" and at most {bound.most:,}"
    raise ConfigError(f"{key}={shown(value)}: must be a whole number, {bound.least} or more{span}{tail}")


def _whole(cfg: Any, key: str, default: int | None = None) -> int | None:
    return check_whole(key, cfg.get(key, default))


def _count(cfg: Any, key: str, default: int) -> int:
    """A whole-number setting without a null meaning (``repeats``, ``batch``): never None."""
    return _whole_number(key, cfg.get(key, default))


def _choice(cfg: Any, key: str, default: Any, allowed: tuple[str, ...], nullable: bool = False) -> str | None:
    value = cfg.get(key, default)
    if value is None and nullable:
        return None
    if isinstance(value, str) and value in allowed:
        return value
    tail = " or null (the model config's)" if nullable else ""
    raise ConfigError(f"{key}={shown(value)}: must be one of {', '.join(allowed)}{tail}")


def _flag(cfg: Any, key: str) -> bool:
    value = cfg.get(key, False)
    if isinstance(value, bool):
        return value
    # a loose reading (`bool("maybe")` is True) would silently run another experiment
    raise ConfigError(f"{key}={shown(value)}: must be true or false")


def _names(cfg: Any, key: str, what: str, example: str) -> tuple[str, ...]:
    """``tasks`` / ``tags``: one name or a list of them (``tasks=read-note`` is one id, not its letters)."""
    from omegaconf import OmegaConf

    value = cfg.get(key)
    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value, resolve=True)
    if value is None:
        return ()
    if isinstance(value, str | int) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, list) and all(isinstance(t, str | int) and not isinstance(t, bool) for t in value):
        return tuple(str(t) for t in value)
    raise ConfigError(f"{key}={shown(value)}: must be a {what} or a list of them, e.g. {key}={example}")


def run_name_problem(run: object) -> str | None:
    """Why ``run`` cannot be a run name, or None; None and ``""`` mean the name derived from the cell.

    A run is one folder directly inside ``results_dir``: no ``/`` nor backslash, no ``..``, not absolute.
    ``run=../../x`` would write outside ``results_dir``; a nested ``run=team/a`` is refused too, so that
    every run is found by listing ``results_dir`` (use ``results_dir=results/team run=a``).
    """
    if run is None or isinstance(run, bool | list | dict) or run == "":
        return None  # not a name: :func:`run_settings` refuses the wrong types with its own message
    name = str(run)
    if name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        return (
            f"run={name}: must be a folder name inside results_dir (no '/', '..' or absolute path); "
            "for a folder elsewhere, use results_dir=PARENT run=NAME"
        )
    return None


def run_settings(cfg: Any) -> RunSettings:
    """Every top-level setting of a composed ``surfbench run`` config, checked; see the module docstring."""
    from omegaconf import OmegaConf

    from surfbench.bench.score.stuck import stop_setting

    check_keys(cfg)
    split = _choice(cfg, "split", "dev", SPLITS)
    order = _choice(cfg, "order", "cache", ORDERS)
    progress = _choice(cfg, "progress", "auto", PROGRESS)
    run = cfg.get("run")
    if isinstance(run, bool | list | dict) or OmegaConf.is_config(run):
        raise ConfigError(f"run={shown(run)}: must be a run name, or null (derived from the cell)")
    return RunSettings(
        split=str(split),
        tasks=_names(cfg, "tasks", "task id", "[read-note,remind-sms]"),
        tags=_names(cfg, "tags", "task tag", "[hot,single]"),
        limit=_whole(cfg, "limit"),
        repeats=_count(cfg, "repeats", 1),
        mode=_choice(cfg, "mode", None, MODES, nullable=True),
        max_steps=_whole(cfg, "max_steps"),
        order=str(order),
        episode_retries=_count(cfg, "episode_retries", 1),
        retry_errors=_flag(cfg, "retry_errors"),
        stop_on_repeat=stop_setting(cfg.get("stop_on_repeat")),
        no_cache=_flag(cfg, "no_cache"),
        progress=str(progress),
        run=str(run) if run not in (None, "") else None,  # blank: derived from the cell, as before
        concurrency=_whole(cfg, "concurrency"),
        **_sequential(cfg),
    )


def _sequential(cfg: Any) -> dict[str, Any]:
    """``until_decided``, ``budget``, ``batch``, ``order_seed``, checked (bench/sequential/until_decided)."""
    from omegaconf import OmegaConf

    gate = cfg.get("until_decided")
    if gate is not None and (not isinstance(gate, str) or not gate.strip() or OmegaConf.is_config(gate)):
        raise ConfigError(
            f"until_decided={shown(gate)}: must be a gate criteria file, e.g. until_decided=configs/gate/dsh.yaml"
        )
    return {
        "until_decided": gate or None,
        "budget": _whole(cfg, "budget"),
        "batch": _count(cfg, "batch", 10),
        "order_seed": _count(cfg, "order_seed", 0),
    }
