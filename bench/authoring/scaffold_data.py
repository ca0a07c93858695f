"""Where the server of ``surfbench init --mcp`` finds its data: a copy in the suite, unless told otherwise.

Isolated by default. The server's arguments are read for the folder it serves: the one argument (or
``--opt=VALUE`` value) that names an existing folder, or the folder ``--fixture DIR`` names. That folder is
copied into the suite as ``fixture/`` and its argument becomes ``{workdir}``: every episode, ``check``
included, starts the server on a fresh copy of the fixture (at the same path each time:
bench/mcp/slots.py), and the folder given to ``init`` is only ever read. Without such a folder the server
starts in a fresh empty folder (``cwd: "{workdir}"``). ``--live-data`` keeps the arguments pointing at the
folder itself (``live_data:`` in suite.yaml): writes change it, and ``check`` says which calls changed what.

Nothing outside the copy: every path in the arguments and in the environment given to the server (``KEY=VALUE``
arguments, an ``env KEY=VALUE ... PROGRAM`` wrapper, whose variables become suite.yaml's ``env:``) that names the
data folder or anything under it is written as ``{workdir}`` or ``{workdir}/REL``. Any other existing path is
refused with one line unless it is the server's own install (its program, an interpreter, a script, an
executable, a file under a virtual environment or ``node_modules``) or ``--live-data`` is given. The data folder
is listed under ``watch:``: ``check`` and ``run`` hash it before the first episode and stop with one line if
it changed (bench/mcp/watch.py).

A server script given as a relative path is written relative to the suite (``{suite}/../server.py``), so the
suite works from any directory and the server may start in its working copy; a relative program or interpreter
(``./.venv/bin/python``) becomes absolute, never resolved through its symlinks (a venv's python is a link to
the base interpreter, which cannot import the venv's packages); absolute paths stay as given. ``python -m
NAME``'s NAME is a module, never a path.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from surfbench.bench.mcp.mcp_spec import McpError, ServerSpec

FIXTURE = "fixture"
"""The suite's copy of the data folder (``catalog.mcp.fixture``)."""
SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".json", ".yaml", ".yml", ".toml", ".sh", ".db", ".sqlite")
"""A relative argument with one of these suffixes (or a path separator) that exists is a path."""
CODE = (".py", ".js", ".mjs", ".cjs", ".ts", ".sh")
"""A file with one of these suffixes is the server's code, never its data."""
INSTALL_PARTS = ("site-packages", "dist-packages", "node_modules", ".venv", "venv")
"""A path through one of these folders is an installed package's, never the server's data."""
ENV_ARG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
"""``KEY=VALUE``: an environment variable (``env``'s arguments), or a value a server reads that way."""


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
    """(index, prefix, value) of every argument that could be a path (``--root=DIR``, ``KEY=DIR``: the prefix)."""
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
        elif (named := ENV_ARG.match(arg)) is not None and not Path(arg).exists():
            prefix, value = f"{named.group(1)}=", named.group(2)
        if value and not value.startswith("{"):
            out.append((i, prefix, value))
    return out


def unwrap_env(spec: ServerSpec) -> ServerSpec:
    """``env KEY=VALUE ... PROGRAM ARGS``: the variables into the spec's ``env``, PROGRAM as its command."""
    if spec.command is None or Path(str(spec.command)).name != "env":
        return spec
    env, args = dict(spec.env), list(spec.args)
    while args and (named := ENV_ARG.match(args[0])) is not None:
        env[named.group(1)] = named.group(2)
        args.pop(0)
    if not args or args[0].startswith("-"):
        raise McpError(
            spec.label,
            "env: give the variables as KEY=VALUE before the server's program (env's own options are not read), "
            "or write them under env: in suite.yaml's catalog.mcp",
        )
    return replace(spec, command=args[0], args=tuple(args[1:]), env=env)


def _under(value: str, data: Path) -> str | None:
    """``value`` as a path relative to the folder ``data`` ("" for the folder itself), or None when outside it.

    Compared both as written (made absolute) and through symlinks, so a link into the data folder is inside.
    """
    forms = {Path(os.path.abspath(value)), Path(os.path.realpath(value))}
    for base in {Path(os.path.abspath(data)), Path(os.path.realpath(data))}:
        for path in forms:
            if path == base:
                return ""
            if base in path.parents:
                return path.relative_to(base).as_posix()
    return None


def _installed(value: str) -> bool:
    """The server's own install: its code, an executable, or anything under a virtual environment or node_modules."""
    path = Path(value)
    if path.suffix.lower() in CODE or any(part in INSTALL_PARTS for part in Path(os.path.abspath(value)).parts):
        return True
    return path.is_file() and os.access(path, os.X_OK)


def _outside(label: str, value: str) -> McpError:
    home = os.path.dirname(value.rstrip(os.sep)) or "."
    return McpError(
        label,
        f"{value} is outside the data folder init copies: the server could change it. Give the folder that holds "
        f"it with --fixture DIR (e.g. --fixture {home}: each episode gets a fresh copy of it), or pass --live-data "
        "to let the server work on your files as they are",
    )


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
    spec = unwrap_env(spec)
    values = _values(spec.args)
    folders = [(i, p, v) for i, p, v in values if Path(v).is_dir()]
    data: Path | None
    if fixture is not None:
        data = Path(fixture)
        if not data.is_dir():
            raise McpError(spec.label, f"--fixture {fixture}: no such folder (give the folder the server serves)")
    else:
        if len({Path(v).resolve() for _, _, v in folders}) > 1 and not live_data:
            named = ", ".join(v for _, _, v in folders)
            raise McpError(
                spec.label,
                f"its arguments name several folders ({named}): say which one holds the data it serves with "
                "--fixture DIR (copied into the suite), or --live-data to let it work on them as they are",
            )
        data = Path(folders[0][2]) if len({Path(v).resolve() for _, _, v in folders}) == 1 else None
    if data is not None and not live_data:
        _not_inside(data, folder, spec.label)
    rewritten: list[tuple[str, str]] = []

    def write(value: str) -> str:
        """``value`` as suite.yaml writes it: in the copy, the suite's own script, or as given."""
        inside = _under(value, data) if data is not None and not live_data else None
        if inside is not None:
            return "{workdir}" + (f"/{inside}" if inside else "")
        if not Path(value).exists():
            parent = Path(os.path.abspath(value)).parent
            if os.sep in value and parent.is_dir() and parent != Path(parent.anchor) and not live_data:
                raise _outside(spec.label, value)  # a file the server would create there
            return value  # not a path: nothing the server could change
        if not (os.path.isabs(value) or _is_path(value)):
            return value
        if not _installed(value) and not live_data:
            raise _outside(spec.label, value)
        if os.path.isabs(value):
            return value
        if Path(value).suffix.lower() not in CODE and Path(value).is_file() and os.access(value, os.X_OK):
            return os.path.abspath(value)  # an executable: absolute, never resolved through its links
        return _from_suite(value, folder)

    args = list(spec.args)
    for i, prefix, value in values:
        args[i] = f"{prefix}{write(value)}"
        if args[i] != spec.args[i]:
            rewritten.append((spec.args[i], args[i]))
    env = {}
    for key, value in spec.env.items():
        env[key] = write(value) if value and not value.startswith("{") else value
        if env[key] != value:
            rewritten.append((f"{key}={value}", f"{key}={env[key]}"))
    command = str(spec.command)
    if os.sep in command and not os.path.isabs(command):  # a program or interpreter: absolute, links kept
        command = _from_suite(command, folder) if Path(command).suffix.lower() in CODE else os.path.abspath(command)
        rewritten.insert(0, (str(spec.command), command))
    written = replace(spec, command=command, args=tuple(args), env=env)
    if live_data:
        if data is not None:
            written = replace(written, live_data=os.path.relpath(data.resolve(), folder.resolve()))
        return Placement(written, live=data, rewritten=tuple(rewritten))
    if data is None:  # nothing to copy: the server starts in a fresh empty folder
        return Placement(replace(written, cwd=spec.cwd or "{workdir}"), rewritten=tuple(rewritten))
    watch = (os.path.relpath(data.resolve(), folder.resolve()),)  # check and run hash it: nothing writes there
    return Placement(replace(written, fixture=FIXTURE, watch=watch), data=data, rewritten=tuple(rewritten))


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
