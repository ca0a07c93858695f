"""The command line of sequential gates: ``surfbench gate --sequential`` and ``surfbench plan``'s sequential part.

``surfbench gate --criteria FILE RUN... --sequential [--batch N] [--budget N] [--seed S]`` judges the criteria
marked ``sequential: true`` pair by pair (bench.sequential.sequential_gate), the others as the fixed-N gate does;
the exit code, ``--json``, ``--out`` and the refusal of scripted runs are the fixed-N gate's.
``surfbench plan ... [--threshold T] [--batch N] [--budget N]`` prints, under the fixed-N requirement, what the
sequential gate takes for the same drop (bench.sequential.sequential.plan_text, by simulation with a fixed seed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} must be {least} or more")
    return value


def add_gate_options(p: argparse.ArgumentParser) -> None:
    """``--sequential`` and its design options on ``surfbench gate``."""
    p.add_argument(
        "--sequential",
        action="store_true",
        help="judge the criteria marked `sequential: true` pair by pair in the runs' recorded (else seeded) order, "
        "with an always-valid test: pass / fail / underpowered at budget, and the pairs each took",
    )
    p.add_argument("--batch", type=lambda t: _whole(t, 1), default=None, help="pairs between looks (default: "
                   "the run's recorded batch, else 10)")  # fmt: skip
    p.add_argument("--budget", type=lambda t: _whole(t, 1), default=None, help="pairs per comparison at most "
                   "(default: the run's recorded budget, else every pair in the runs)")  # fmt: skip
    p.add_argument("--seed", type=lambda t: _whole(t, 0), default=None, help="seed of the pairs' random order for "
                   "runs that recorded none (default 0)")  # fmt: skip


def gate_command(args: argparse.Namespace, reading_runs: Callable[[str, Any, Callable[[], Any]], Any]) -> int:
    """``surfbench gate --sequential``: print the table, return the gate's exit code."""
    from surfbench.bench.report.gate_exit import EXIT_REFUSED, gate_json, scripted_warning
    from surfbench.bench.sequential.sequential_gate import format_sequential, judge_sequential

    gate = reading_runs(
        "gate",
        args.runs,
        lambda: judge_sequential(
            Path(args.criteria),
            [Path(r) for r in args.runs],
            batch=args.batch,
            budget=args.budget,
            seed=args.seed,
            keep_newest=args.keep_newest,
        ),  # fmt: skip
    )
    result = gate.result
    if result.scripted and not getattr(args, "allow_scripted", False):  # a script's numbers are no evidence
        print(scripted_warning(result.scripted, allowed=False), file=sys.stderr)
        return EXIT_REFUSED
    text = format_sequential(gate)
    if getattr(args, "json", False):
        text = gate_json(result.name, result.baseline, result.decisions, result.per_model, result.scripted)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return result.exit_code


def add_plan_options(p: argparse.ArgumentParser) -> None:
    """The sequential design options of ``surfbench plan``."""
    p.add_argument(
        "--threshold",
        type=float,
        default=0.0,
        help="the gate's allowed drop (its criterion's value, e.g. 0.05) for the sequential estimate; default 0: "
        "any drop",
    )
    p.add_argument("--batch", type=lambda t: _whole(t, 1), default=10, help="pairs between looks (default 10)")
    p.add_argument(
        "--budget",
        type=lambda t: _whole(t, 1),
        default=None,
        help="pairs per comparison at most (default: twice the fixed-N requirement at the threshold)",
    )


def plan_command(args: argparse.Namespace) -> int:
    """``surfbench plan``: the fixed-N requirement, then the sequential gate's pairs to a decision."""
    from surfbench.bench.sequential.sequential import plan_text

    print(plan_text(args.baseline, args.drop, args.paired_discordance, args.threshold, args.batch, args.budget))
    return 0
