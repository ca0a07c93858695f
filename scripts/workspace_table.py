"""docs/results/workspace.md's table: per model x surface, success, cost and the rate of each failure mode.

    python scripts/workspace_table.py results/reference/workspace-all

Failure-mode columns: share of episodes with that error type at least once (as in the report's error
table); schema-invalid calls per episode from calls.parquet. Then the calls to tools a surface does
not have: how many name a script from tools/ and how many distinct names the rest invent.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from surfbench.bench.base.markdown import markdown_table  # noqa: E402
from surfbench.bench.base.taxonomy import ErrorType  # noqa: E402
from surfbench.bench.store.results import load_runs  # noqa: E402
from surfbench.tasks.workspace.backend import named_tools  # noqa: E402

SURFACES = ["unified", "split", "four", "bash"]
MODES = [
    "steps_and_pipe", "pipe_for_steps", "steps_for_pipe", "inline_reimplementation", "inline_code_rejected",
    ErrorType.NOT_EXPOSED,
]  # fmt: skip


def table(run: str | Path) -> str:
    """The page's table over a workspace run folder, then the count of calls to tools a surface lacks (markdown)."""
    episodes = load_runs([run])
    calls = load_runs([run], table="calls")
    episodes = episodes[episodes["suite"] == "workspace"]
    if not len(episodes):
        raise ValueError(f"{run}: no workspace episode")
    head = ["model", "surface", "episodes", "success", "round trips", "prompt tok/step", "tool block B"]
    head += [*MODES, "schema-invalid calls/ep"]
    rows: list[list[str]] = []
    for model in sorted(set(episodes["model"])):
        for surface in SURFACES:
            g = episodes[(episodes["model"] == model) & (episodes["surface"] == surface)]
            if not len(g):
                continue
            n = len(g)
            seen = Counter(t for raw in g["error_types"] for t in set(json.loads(raw)))
            mine = calls[calls["episode_key"].isin(g["episode_key"])]
            invalid = (mine["error_type"] == ErrorType.SCHEMA_INVALID).sum() / n
            size = model.replace("qwen2.5-coder-", "").replace("-instruct", "")
            rows.append([
                size, surface, str(n), f"{100 * g['success'].mean():.0f}% ({int(g['success'].sum())})",
                f"{g['round_trips'].mean():.1f}", f"{g['prompt_tokens_per_step'].mean():,.0f}",
                f"{g['tool_block_bytes_first'].mean():,.0f}",
                *(f"{100 * seen.get(m, 0) / n:.0f}%" for m in MODES), f"{invalid:.2f}",
            ])  # fmt: skip
    mine = calls[calls["episode_key"].isin(episodes["episode_key"])]
    outside = mine[mine["error_type"] == ErrorType.NOT_EXPOSED]
    scripts = outside["tool"].isin(named_tools())
    real = outside["operation"].notna()  # a canonical operation another surface shows (read_file on bash ...)
    invented = outside[~scripts & ~real]
    top = outside.loc[scripts, "tool"].value_counts().head(3).to_dict()
    return (
        markdown_table(head, rows)
        + f"\n\ncalls to tools the surface lacks: {len(outside)}; naming a tools/ script: {int(scripts.sum())} {top}; "
        f"naming another surface's operation: {int((real & ~scripts).sum())}; invented: {len(invented)} calls "
        f"under {invented['tool'].nunique()} names; episodes {len(episodes)}, model time "
        f"{episodes['latency_s'].sum() / 3600:.2f} h\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a workspace result folder")
    args = parser.parse_args()
    if not (Path(args.run) / "run.json").is_file():
        print(f"workspace_table: {args.run}: not a surfbench run folder (no run.json)", file=sys.stderr)
        return 2
    try:
        print(table(args.run), end="")
    except ValueError as exc:
        print(f"workspace_table: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
