"""docs/results/cache.md's table and rank list, from a run's report.md (so the page is re-derived, never retyped).

    surfbench report results/reference/forge-dev-qwen0.5b-llama-server --baseline full
    python scripts/cache_table.py results/reference/forge-dev-qwen0.5b-llama-server

Reads only ``<run>/report/report.md``: the "Surfaces x models" table (raw prompt tokens, the server's measured
cache share, effective tokens and cost per profile, first-try accuracy), the "Prompt caching per provider
profile" table (the single-slot model's share) and the "Cache breaks" table. Prints the page's table, each
surface's rank by raw prompt tokens and by effective tokens under every profile (1 = fewest), and its breaks.
``--check FILE`` exits 1 when FILE's table rows differ from the ones printed (docs that drifted from the data).
``--breakpoints`` also reads the run's requests (the steps' recorded segments) and says, per surface, how far
the Anthropic profile's breakpoints (after the tool block, after the system text) reach: its largest breakpoint
prefix and how many requests have one of at least the profile's minimum (below it nothing is cached).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from surfbench.bench.base.markdown import tables_by_heading  # noqa: E402

PROFILES = ("openai", "anthropic", "gemini")
HEAD = (
    "| surface | prompt tok/step (raw) | cached, measured (server) | cached, modelled `local` | eff. tok/step openai "
    "| anthropic | gemini | $/episode openai / anthropic / gemini | first-try [95% CI] |"
)


def _find(tables: dict[str, list[dict[str, str]]], prefix: str, report: Path) -> list[dict[str, str]]:
    for name, rows in tables.items():
        if name.startswith(prefix):
            return rows
    raise SystemExit(f"cache_table: {report}: no '{prefix}' table; run `surfbench report` on a run with cache data")


def number(cell: str) -> float:
    return float(cell.replace(",", "").split()[0])


def rows(report: Path) -> tuple[list[str], list[str]]:
    """(table lines, rank and break lines) for one report.md."""
    tables = tables_by_heading(report.read_text())
    cells = _find(tables, "Surfaces x models", report)
    modelled = {r["surface"]: r for r in _find(tables, "Prompt caching per provider profile", report)}
    breaks = {r["surface"]: r for r in _find(tables, "Cache breaks", report)}
    if len({(r["suite"], r["model"], r["mode"]) for r in cells}) != 1:
        raise SystemExit(f"cache_table: {report}: more than one suite x model x mode; the page is about one")
    table = [HEAD, "|" + "---|" * 9]
    for r in cells:
        eff = [r[f"eff. tok/step, $/ep ({p})"].split(" / ") for p in PROFILES]
        table.append(
            f"| {r['surface']} | {r['prompt tok/step']} | {r['cached']} | {modelled[r['surface']]['cached (local)']} | "
            + " | ".join(e[0] for e in eff)
            + f" | {' / '.join(e[1] for e in eff)} | {r['first-try args [95% CI]']} |"
        )
    ranks: dict[str, list[int]] = {}
    columns = ["prompt tok/step"] + [f"eff. tok/step, $/ep ({p})" for p in (*PROFILES, "local")]
    for col in columns:
        order = sorted(cells, key=lambda r, c=col: number(r[c]))  # type: ignore[misc]
        for rank, r in enumerate(order, 1):
            ranks.setdefault(r["surface"], []).append(rank)
    notes = ["rank (1 = fewest): raw / openai / anthropic / gemini / local; cache breaks (tools/system/history)"]
    for r in sorted(cells, key=lambda r: ranks[r["surface"]][0]):
        b = breaks[r["surface"]]
        notes.append(
            f"- {r['surface']}: {' / '.join(map(str, ranks[r['surface']]))}; {b['breaks']} breaks "
            f"({b['where (tools / system / history)']}) in {r['episodes']} episodes"
        )
    return table, notes


def breakpoint_reach(run: Path) -> list[str]:
    """Per surface: the Anthropic profile's largest breakpoint prefix, and the requests with one it would cache."""
    from surfbench.bench.models.cache_profiles import profile
    from surfbench.bench.promptcache.prompt_cache_model import breakpoint_prefix
    from surfbench.bench.promptcache.prompt_cache_requests import CELL_KEYS, run_requests
    from surfbench.bench.store.reader import load

    lines = []
    for key, cell in run_requests(load(run, suites=False)).items():
        p = profile("anthropic", cell.overrides.get("anthropic"))
        reach = [breakpoint_prefix(r, p) for r in cell.requests]
        cached = sum(n >= p.min_tokens for n in reach)
        surface = key[CELL_KEYS.index("surface")]
        lines.append(
            f"- {surface}: largest breakpoint prefix {max(reach, default=0):,} tokens; {cached} of {len(reach)} "
            f"requests reach {p.min_tokens:,}"
        )
    return ["anthropic breakpoints (after the tool block and the system text), per surface:", *lines]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a run folder whose report/report.md `surfbench report` wrote")
    parser.add_argument("--check", metavar="FILE", help="exit 1 if FILE's table differs from the run's")
    parser.add_argument("--breakpoints", action="store_true", help="how far Anthropic's breakpoints reach")
    args = parser.parse_args()
    report = Path(args.run) / "report" / "report.md"
    if not report.is_file():
        print(f"cache_table: {report}: no report; run `surfbench report {args.run}` first", file=sys.stderr)
        return 2
    table, notes = rows(report)
    if args.check:
        lines = Path(args.check).read_text().splitlines()
        start = lines.index(HEAD) if HEAD in lines else -1
        found = lines[start : start + len(table)] if start >= 0 else []
        if found != table:
            print(f"cache_table: {args.check}: its table differs from {report}; expected:", file=sys.stderr)
            print("\n".join(table), file=sys.stderr)
            return 1
        return 0
    print("\n".join(table))
    print()
    print("\n".join(notes))
    if args.breakpoints:
        print()
        print("\n".join(breakpoint_reach(Path(args.run))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
