"""``surfbench synth SUITE``: verified tasks from the suite's own catalog and world (bench/synth/synth_run.py).

Writes them, with the command that regenerates them in the file's header, to ``SUITE/synth/tasks.yaml``
(or ``--out``), as split ``synth``; prints a summary (kept, rejected by reason, per operation). ``--dry-run``
prints ten candidates with what their verification found, and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import yaml

from surfbench.bench.base.argtypes import ParserT, positive_int
from surfbench.bench.base.atomic import output_problem
from surfbench.bench.base.atomic import staged as staged_file

if TYPE_CHECKING:  # the engine loads when the command runs, not with the parser
    from surfbench.bench.synth.synth_run import Model, SynthResult

DRY_RUN = 10
"""Candidates ``--dry-run`` shows (bench.synth.synth_run.DRY_RUN)."""

OUT = Path("synth") / "tasks.jsonl"
"""Where the tasks go by default, relative to the suite's folder: JSON lines (a thousand load in a blink),
with what made them beside, in ``tasks.md``. An ``--out`` ending in ``.yaml`` gets them as YAML, that text
as its header."""


def command_line(args: argparse.Namespace) -> str:
    """The command that regenerates the file (defaults left out, so it runs from anywhere)."""
    parts = ["surfbench", "synth", args.suite, "--n", str(args.n), "--seed", str(args.seed)]
    for flag in ("writer", "checker"):
        if getattr(args, flag):
            parts += [f"--{flag}", getattr(args, flag)]
    if args.checker and args.checker_tries != 3:
        parts += ["--checker-tries", str(args.checker_tries)]
    if args.out:
        parts += ["--out", args.out]
    return shlex.join(parts)


def header_lines(result: SynthResult, command: str) -> list[str]:
    """What made a task file, how to make it again, what was rejected and why (no time, no path of this machine)."""
    from surfbench.bench.synth.synth_build import GENERATOR

    rejected = ", ".join(f"{code} {count}" for code, count in sorted(result.rejected.items())) or "none"
    ops = len(result.suite.catalog)
    lines = [
        f"Tasks synthesized by {GENERATOR} from the suite's catalog and world, each verified (docs/suites.md,",
        '"Synthesized tasks"): split synth. Do not edit by hand; regenerate with:',
        f"  {command}",
        f"kept {len(result.rows)} of {result.tried} candidates; {result.covered} of {ops} operations covered.",
        f"rejected: {rejected}.",
    ]
    if result.checked is not None:
        lines.append(f"back-translation: {result.checked[0]} of {result.checked[1]} solved by the checker.")
    return lines


def header(result: SynthResult, command: str) -> str:
    """The header of a YAML task file: :func:`header_lines` as comments."""
    return "".join(f"# {line}\n" for line in header_lines(result, command))


def sidecar(result: SynthResult, command: str, out: Path) -> str:
    """``tasks.md`` beside a JSON-lines task file: :func:`header_lines`, and the tasks per operation."""
    lines = header_lines(result, command)
    per = result.per_key
    rows = [
        f"| {key} | {c['kept']} | {c['rejected']} |" for key, c in sorted(per.items()) if c["kept"] or c["rejected"]
    ]
    return "\n".join(
        [f"# {out.name}", "", lines[0], lines[1], "", "```", lines[2].strip(), "```", "", *lines[3:], "",
         "| plan (operation, pair, refusal) | kept | rejected |", "|---|---:|---:|", *rows, ""]
    )  # fmt: skip


def jsonl_text(rows: Iterable[Mapping[str, object]]) -> str:
    """The rows as JSON lines, in order (keys in the order the generator wrote them)."""
    return "".join(json.dumps(row, ensure_ascii=False, separators=(", ", ": ")) + "\n" for row in rows)


def task_text(rows: Iterable[Mapping[str, object]]) -> str:
    """The rows as YAML, one block per task (flow style inside), in order."""
    out = []
    for row in rows:
        for i, (key, value) in enumerate(row.items()):
            text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=1 << 20, sort_keys=False)
            text = text.removesuffix("\n").removesuffix("\n...").strip()
            out.append(f"{'- ' if i == 0 else '  '}{key}: {text}\n")
    return "".join(out)


def write_all(texts: dict[Path, str]) -> None:
    """Every file whole: each text written beside its path first, then all renamed into place."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in texts.items():
            staged.append((staged_file(path, text), path))
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)


SYNTH_MARK = "Tasks synthesized by "
"""What the head of a YAML task file or a tasks.md synth wrote holds (a JSON-lines row: its generator)."""


def outputs(out: Path) -> list[Path]:
    """The files a synthesis into ``out`` writes: the tasks, and beside JSON lines what made them."""
    return [out] if out.suffix in (".yaml", ".yml") else [out, out.with_suffix(".md")]


def _synth_wrote(path: Path) -> bool:
    """Whether ``path`` is empty or a file synth wrote (so rewriting it loses nothing hand-made)."""
    with path.open("rb") as f:
        head = f.read(1 << 16)
    return not head.strip() or SYNTH_MARK.encode() in head or b'"synth": {"generator": ' in head


def check_outputs(out: Path, label: str) -> None:
    """Refuse, before any work, an output that cannot be written or would destroy something (ValueError).

    ``label``: how the message names it (``--out x.md``, or the suite's default file).
    """
    files = outputs(out)
    if len(files) > 1 and files[1] == files[0]:
        raise ValueError(f"{label}: the tasks and what made them ({files[1].name}, written beside JSON lines) would "
                         "be the same file; name a .jsonl or a .yaml file")  # fmt: skip
    for path in files:
        what = "the task file" if path == out else f"{path} (what made the tasks, written beside them)"
        if path.is_dir():
            hint = f", e.g. {path / OUT.name}" if path == out else ""
            raise ValueError(f"{label}: {what} is a folder; name a file{hint}")
        try:
            foreign = path.is_file() and not _synth_wrote(path)
        except OSError as exc:
            raise ValueError(f"{label}: cannot read {what}: {exc.strerror}") from None
        if foreign:
            raise ValueError(f"{label}: {what} exists and synth did not write it; name another file (or remove it)")
    folder = out.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{label}: {folder} is a file, not a folder; name a file in a folder")
    problem = output_problem(out)  # probes the folder: permission bits say nothing for root, nor for /proc
    if problem:
        raise ValueError(f"{label}: {problem}")


class Bar:
    """Kept/N on a bar redrawn in place on a terminal; a line every tenth of the way elsewhere."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.out = stream or sys.stderr
        self.live = live if live is not None else (self.out.isatty() and not os.environ.get("CI"))
        self.started = time.perf_counter()
        self.step = -1

    def __call__(self, kept: int, n: int, tried: int, key: str) -> None:
        elapsed = time.perf_counter() - self.started
        eta = elapsed / kept * (n - kept) if kept else 0.0
        text = f"{kept}/{n} kept, {tried} tried, ETA {int(eta) // 60}m{int(eta) % 60:02d}s ({key})"
        if self.live:
            filled = int(24 * kept / n) if n else 24
            self.out.write(f"\rsynth {'█' * filled}{'░' * (24 - filled)} {text}".ljust(110))
            if kept >= n:
                self.out.write("\n")
            self.out.flush()
        elif n and kept * 10 // n > self.step:
            self.step = kept * 10 // n
            print(f"synth: {text}", file=self.out, flush=True)

    def close(self) -> None:
        if self.live:
            self.out.write("\n")
            self.out.flush()


def summary(result: SynthResult) -> list[str]:
    """Kept, rejected by reason, per operation (kept/tried), the back-translation pass rate."""
    catalog = result.suite.catalog
    lines = [
        f"synth {result.suite.name}: kept {len(result.rows)} of {result.n} asked ({result.tried} candidates, "
        f"{result.episodes} replays; world: {result.world.source})",
        f"operations covered: {result.covered} of {len(catalog)}",
        "rejected by reason: "
        + (", ".join(f"{c} {k}" for c, k in sorted(result.rejected.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"),
    ]
    if result.unresolved:
        top = sorted(result.unresolved.items(), key=lambda kv: (-kv[1], kv[0]))
        shown_ = ", ".join(f"{what} {n}" for what, n in top[:5]) + (f", {len(top) - 5} more" if len(top) > 5 else "")
        lines.append(
            f"unresolved, what had no value: {shown_}. Give it one: a `values:` entry or a slot's argument in "
            "synth/templates.yaml, a field of a world record, or an example, enum or default in the tool's schema "
            '(docs/suites.md, "Synthesized tasks")'
        )
    per = result.per_key
    by_op = sorted(per, key=lambda k: (-(catalog[k].weight if k in catalog else 0), k))
    cells = [f"{k} {per[k]['kept']}/{per[k]['kept'] + per[k]['rejected']}" for k in by_op]
    lines.append("per operation (kept/tried): " + ", ".join(cells))
    missing = [op for op in catalog.names if op not in result.covered_ops]
    if missing:
        lines.append(f"no task for: {', '.join(missing)}")
    if result.checked is not None:
        done, tried = result.checked
        rate = f"{100 * done / tried:.0f}%" if tried else "n/a"
        lines.append(f"back-translation (checker solves the task from its request): {done}/{tried} ({rate})")
    return lines


def dry_lines(result: SynthResult) -> list[str]:
    out = []
    for i, (cand, verdict) in enumerate(result.shown[:DRY_RUN], 1):
        calls = "; ".join(f"{d.op}({', '.join(f'{k}={v!r}' for k, v in d.args.items())})" for d in cand.drafts)
        out.append(f"{i}. [{cand.say.id}] {cand.text!r}")
        none = "(none: no operation serves it)" if cand.refuse else "(none: an argument has no value)"
        out.append(f"   calls: {calls or none}")
        out += [f"   {step}" for step in verdict.steps]
        out.append(f"   => {'kept' if verdict.kept else 'rejected: ' + verdict.reason}")
    return out


def _listed(folder: Path) -> list[str]:
    """The task files suite.yaml lists."""
    try:
        data = yaml.safe_load((folder / "suite.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return []
    tasks = data.get("tasks") if isinstance(data, dict) else None
    return [str(t) for t in tasks] if isinstance(tasks, list) else []


def _model(name: str | None) -> Model | None:
    if not name:
        return None
    from surfbench.bench.models import ModelPool, model_config
    from surfbench.bench.synth.synth_run import Model

    return Model(name, ModelPool(None).client(model_config(name)))


def _synth(args: argparse.Namespace) -> int:
    from surfbench.bench.synth.synth_run import Synthesizer

    bar = Bar(live={"live": True, "plain": False}.get(args.progress))
    n = min(args.n, DRY_RUN) if args.dry_run else args.n
    try:
        synth = Synthesizer(args.suite, n, args.seed, _model(args.writer), _model(args.checker), args.checker_tries,
                            progress=bar, dry_run=args.dry_run, jobs=args.jobs)  # fmt: skip
        out = Path(args.out) if args.out else synth.suite.folder / OUT
        label = f"--out {args.out}" if args.out else str(out)
        if not args.dry_run:
            check_outputs(out, label)  # before the work: an --out at fault costs no synthesis
        result = synth.run()
    except KeyboardInterrupt:
        bar.close()
        print("surfbench: interrupted; nothing written (synth writes its tasks once all are made), "
              "re-run the same command to start again", file=sys.stderr)  # fmt: skip
        return 130
    bar.close()
    if args.dry_run:
        for line in dry_lines(result):
            print(line)
        print(f"dry run: {len(result.shown)} candidates shown; nothing written")
        return 0
    command = command_line(args)
    if out.suffix in (".yaml", ".yml"):
        texts = {out: header(result, command) + task_text(result.rows)}
    else:
        texts = {out: jsonl_text(result.rows), out.with_suffix(".md"): sidecar(result, command, out)}
    try:
        write_all(texts)
    except OSError as exc:
        raise ValueError(f"{label}: cannot write {exc.filename or out}: {exc.strerror}; nothing written") from None
    for line in summary(result):
        print(line)
    print(f"wrote {len(result.rows)} tasks (split synth) to {out}" + ("" if out.suffix in (".yaml", ".yml") else
          f", what made them to {out.with_suffix('.md')}"))  # fmt: skip
    listed = {(synth.suite.folder / t).resolve() for t in _listed(synth.suite.folder)}
    if out.resolve() not in listed:
        rel = os.path.relpath(out, synth.suite.folder)
        print(f"note: to run them, add {rel} to the tasks of {synth.suite.folder / 'suite.yaml'} (then split=synth)")
    if len(result.rows) < args.n:
        print(f"note: asked for {args.n}; the world and templates gave only {len(result.rows)} verified tasks")
    return 0


def add_synth_command(sub: argparse._SubParsersAction[ParserT]) -> None:
    """The ``synth`` subcommand, on the ``surfbench`` parser's subparsers."""
    p = sub.add_parser("synth", help="verified tasks from a suite's catalog and world (split synth)")
    p.add_argument("suite", metavar="SUITE", help="a suite's name or folder")
    p.add_argument("--n", type=positive_int, default=100, help="tasks to keep (default 100)")
    p.add_argument("--seed", type=int, default=0, help="the seed every draw follows (default 0)")
    p.add_argument("--out", default=None, help=f"the task file to write (default: SUITE/{OUT.as_posix()})")
    p.add_argument("--dry-run", action="store_true", help=f"print {DRY_RUN} candidates and their verification")
    p.add_argument("--writer", metavar="MODEL", default=None, help="a model config that rewrites each request")
    p.add_argument(
        "--checker",
        metavar="MODEL",
        default=None,
        help="a model config shown full that must solve each task from its request (back-translation)",
    )
    p.add_argument("--checker-tries", type=positive_int, default=3, help="tries the checker gets per task (3)")
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="candidates verified at once (a live server's start is slow); the tasks are the same",
    )
    p.add_argument("--progress", choices=["auto", "live", "plain"], default="auto")
    p.set_defaults(func=_synth)
