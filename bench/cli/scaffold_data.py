"""Where the server of ``surfbench init --mcp`` finds its data: a copy in the suite, unless told otherwise.

Isolated by default. The server's arguments are read for the folder it serves: the one argument (or
``--opt=VALUE`` value) that names an existing folder, or the folder ``--fixture DIR`` names. That folder is
copied into the suite as ``fixture/`` and its argument becomes ``{workdir}``: every episode, ``check``
included, starts the server on a fresh copy of the fixture (at the same path each time:
bench/mcp/slots.py), and the folder given to ``init`` is only ever read. Without such a folder the server
starts in a fresh empty folder (``cwd: "{workdir}"``). ``--live-data`` keeps the arguments pointing at the
folder itself (``live_data:`` in suite.yaml): writes change it, and ``check`` says which calls changed what.

Other arguments that are relative paths (a server script, a config file) are written relative to the
suite (``{suite}/../server.py``), so the suite works from any directory and the server may start in its
working copy; absolute paths stay as given. ``python -m NAME``'s NAME is a module, never a path.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from surfbench.bench.mcp.spec import McpError, ServerSpec

FIXTURE = "fixture"
"""The suite's copy of the data folder (``catalog.mcp.fixture``)."""
SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".json", ".yaml", ".yml", ".toml", ".sh", ".db", ".sqlite")
"""A relative argument with one of these suffixes (or a path separator) that exists is a path."""


@dataclass(frozen=True)
class Placement:
    """The server as suite.yaml writes it, and where its data comes from."""

    spec: ServerSpec
    """Arguments with ``{workdir}`` and ``{suite}/...``; ``fixture``/``live_data`` relative to the suite."""
    data: Path | None = None
    """The folder copied into the suite as its fixture (None: none)."""
    live: Path | None = None
    """``--live-data``: the folder the server works on itself."""
    rewritten: tuple[tuple[str, str], ...] = ()
    """(argument as given, as written), for every argument init changed."""

    def listing_spec(self, target: Path, final: Path) -> ServerSpec:
        """The spec init lists the tools with: the fixture being built in ``target``, ``{suite}`` at ``final``."""
        fixture = str(target / FIXTURE) if self.data is not None else None
        live = str(self.live.resolve()) if self.live is not None else None
        return replace(self.spec, fixture=fixture, live_data=live, suite_dir=str(final.resolve()))


def _values(args: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """(index, prefix, value) of every argument that could be a path (``--root=DIR``: prefix ``--root=``)."""
    out = []
    for i, arg in enumerate(args):
        if i > 0 and args[i - 1] == "-m":  # python -m NAME: a module
            continue
        prefix, value = ("", arg)
        if arg.startswith("-"):
            if "=" not in arg:
                continue
            head, _, value = arg.partition("=")
            prefix = f"{head}="
        if value and not value.startswith("{"):
            out.append((i, prefix, value))
    return out


def _is_path(value: str) -> bool:
    """A relative argument worth rewriting: it exists and looks like a path (a separator, a known suffix, a folder)."""
    path = Path(value)
    return path.exists() and (os.sep in value or path.suffix.lower() in SUFFIXES or path.is_dir())


def _from_suite(value: str, folder: Path) -> str:
    """``value`` (relative to the current folder) written relative to the suite folder: ``{suite}/../x``."""
    return "{suite}/" + Path(os.path.relpath(Path(value).resolve(), folder.resolve())).as_posix()


def place(spec: ServerSpec, folder: Path, fixture: str | None = None, live_data: bool = False) -> Placement:
    """Where the server's data comes from (see the module docstring); McpError for an ambiguous command line.

    ``folder``: the new suite's folder (it need not exist yet).
    """
    if spec.command is None:
        if fixture or live_data:
            raise McpError(str(spec.url), "--fixture and --live-data apply to --mcp (a stdio server) only")
        return Placement(spec)
    if fixture and live_data:
        raise McpError(spec.label, "--fixture copies the data and --live-data works on it: give one of them")
    values = _values(spec.args)
    folders = [(i, p, v) for i, p, v in values if Path(v).is_dir()]
    data: Path | None
    if fixture is not None:
        data = Path(fixture)
        if not data.is_dir():
            raise McpError(spec.label, f"--fixture {fixture}: no such folder (give the folder the server serves)")
        chosen = [(i, p, v) for i, p, v in folders if Path(v).resolve() == data.resolve()]
    else:
        if len({Path(v).resolve() for _, _, v in folders}) > 1 and not live_data:
            named = ", ".join(v for _, _, v in folders)
            raise McpError(
                spec.label,
                f"its arguments name several folders ({named}): say which one holds the data it serves with "
                "--fixture DIR (copied into the suite), or --live-data to let it work on them as they are",
            )
        chosen = folders
        data = Path(folders[0][2]) if len({Path(v).resolve() for _, _, v in folders}) == 1 else None
    if data is not None and not live_data:
        _not_inside(data, folder, spec.label)
    args, rewritten = list(spec.args), []
    for i, prefix, value in values:
        if (i, prefix, value) in chosen and not live_data:
            args[i] = f"{prefix}{{workdir}}"
        elif not os.path.isabs(value) and (_is_path(value) or (i, prefix, value) in chosen):
            args[i] = f"{prefix}{_from_suite(value, folder)}"
        if args[i] != spec.args[i]:
            rewritten.append((spec.args[i], args[i]))
    command = str(spec.command)
    if os.sep in command and not os.path.isabs(command) and Path(command).is_file():
        command = _from_suite(command, folder)
        rewritten.insert(0, (str(spec.command), command))
    if live_data:
        live = data
        written = replace(spec, command=command, args=tuple(args))
        if live is not None:
            written = replace(written, live_data=os.path.relpath(live.resolve(), folder.resolve()))
        return Placement(written, live=live, rewritten=tuple(rewritten))
    if data is None:  # nothing to copy: the server starts in a fresh empty folder
        written = replace(spec, command=command, args=tuple(args), cwd=spec.cwd or "{workdir}")
        return Placement(written, rewritten=tuple(rewritten))
    written = replace(spec, command=command, args=tuple(args), fixture=FIXTURE)
    return Placement(written, data=data, rewritten=tuple(rewritten))


def _not_inside(data: Path, folder: Path, label: str) -> None:
    """McpError when the suite would be written into the data folder it copies (a copy of itself)."""
    real, suite = data.resolve(), folder.resolve()
    if suite == real or real in suite.parents:
        raise McpError(
            label,
            f"the suite folder {folder} is inside the data folder {data}: init would copy the suite into itself; "
            "write the suite outside it",
        )


def copy_data(placement: Placement, target: Path) -> tuple[int, int]:
    """Copy the data folder into ``target/fixture``; (files, bytes) copied (0, 0 when there is none)."""
    if placement.data is None:
        return 0, 0
    dest = target / FIXTURE
    try:
        shutil.copytree(placement.data, dest, symlinks=True)
    except (OSError, shutil.Error) as exc:
        raise McpError(placement.spec.label, f"cannot copy the data folder {placement.data}: {exc}") from None
    files = [p for p in dest.rglob("*") if p.is_file() and not p.is_symlink()]
    return len(files), sum(p.stat().st_size for p in files)


def tree_state(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` (relative path -> size, modification time in ns): what a write changes."""
    out = {}
    for path in sorted(folder.rglob("*")):
        try:
            info = path.lstat()
        except OSError:
            continue
        if not path.is_dir():
            out[path.relative_to(folder).as_posix()] = (info.st_size, info.st_mtime_ns)
    return out


def tree_changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """``a.txt (changed)``, ``b.txt (new)``, ``c.txt (removed)``: what differs between two tree_state()s."""
    out = [f"{p} (new)" if p not in before else f"{p} (changed)" for p in after if before.get(p) != after[p]]
    return out + [f"{p} (removed)" for p in before if p not in after]
