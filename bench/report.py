"""``surfbench report RUN...``: a markdown report and one self-contained HTML file.

Per suite x surface x model x mode: tools, tool-block bytes and tokens, ratio vs the baseline, prompt
tokens per step, round trips and overhead round trips, first-try argument accuracy with its 95%
interval, tool selection, success, recovered-after-error, violations, latency; a paired comparison
against the baseline surface (McNemar on success, paired bootstrap on first-try accuracy);
per-operation first-try accuracy, hottest operations first; three figures.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from surfbench.bench.figures import draw_all
from surfbench.bench.funnel import funnel_section
from surfbench.bench.markdown import markdown_table
from surfbench.bench.multicall import multicall_section
from surfbench.bench.report_choices import ACCESS_HEAD, access_table, picks_table
from surfbench.bench.report_data import (
    CELL_HEAD,
    KIND_ORDER,
    PAIRED_HEAD,
    PASS_K_HEAD,
    ReportData,
    cell_table,
    collect,
    error_table,
    paired_table,
    pass_k_table,
    per_op_table,
)
from surfbench.bench.scale_figure import scale_section


def markdown(data: ReportData, figures: dict[str, str]) -> str:
    """The report as markdown; ``figures``: figure title -> image path relative to the report."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# surfbench report\n\nRuns: {', '.join(data.runs)}. Made {stamp}. Baseline surface: `{data.baseline}`."]
    if data.scripted:
        parts.append("> **Scripted model in these runs: not a measurement.**")
    parts += [f"> Note: {note}" for note in data.notes]
    parts.append("## Surfaces x models\n\n" + markdown_table(CELL_HEAD, cell_table(data)))
    if data.paired:
        parts.append(
            f"## Paired against `{data.baseline}` (same tasks)\n\nSuccess: McNemar's exact test on discordant "
            "pairs. First-try argument accuracy: difference with a 95% paired-bootstrap interval. MDE: the "
            "smallest difference these pairs detect at 80% power, 5% two-sided; a smaller difference can "
            "neither be shown nor ruled out here (`surfbench plan` says what would).\n\n"
            + markdown_table(PAIRED_HEAD, paired_table(data))
        )
    pk_rows = pass_k_table(data)
    if pk_rows:
        parts.append(
            "## Repeats: pass@k and pass^k\n\npass@k: at least one of k repeats succeeds; pass^k: all k "
            "succeed (tau-bench). Wilson intervals over tasks.\n\n" + markdown_table(PASS_K_HEAD, pk_rows)
        )
    head, rows = per_op_table(data)
    parts.append("## First-try argument accuracy per operation (hottest first)\n\n" + markdown_table(head, rows))
    err_head, err_rows = error_table(data)
    if err_rows:
        parts.append(
            "## Error types: share of episodes with each (at least once)\n\n"
            "Suite-specific failure modes (e.g. the workspace suite's `steps_and_pipe`, `pipe_for_steps`, "
            "`steps_for_pipe`, `inline_reimplementation`) appear here with the scorer's own types.\n\n"
            + markdown_table(err_head, err_rows)
        )
    parts += choice_sections(data)
    parts += funnel_section(data.funnel)  # preselect, search, lazy: where tasks are lost (bench.funnel)
    parts += multicall_section(data.multicall, data.baseline)  # round trips where one program could save calls
    parts += scale_section(data.scale)  # runs with more than one catalog size: the scale figure's numbers
    if figures:
        parts.append("## Figures\n\n" + "\n\n".join(f"![{name}]({path})" for name, path in figures.items()))
    return "\n\n".join(parts) + "\n"


def _column_order(col: tuple[str, str]) -> tuple[str, int, str]:
    return col[1], KIND_ORDER.get(col[0], 9), col[0]


def choice_sections(data: ReportData) -> list[str]:
    """The alternatives-picked table (when a suite has ``one_of`` calls) and the read/write split (when asked)."""
    parts = []
    if data.picks:
        parts.append(
            "## Alternatives picked (`one_of`)\n\nPer expected call with alternatives: the episodes whose first "
            "attempt called each alternative (`none`: no alternative was called).\n\n"
            + markdown_table(*picks_table(data.picks, _column_order, data.originals))
        )
    if data.access:
        parts.append(
            "## First-try argument accuracy: read vs write operations\n\nRead: operations the catalog marks "
            "read-only (MCP `readOnlyHint`); write: every other.\n\n"
            + markdown_table(ACCESS_HEAD, access_table(data.access))
        )
    return parts


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


CSS = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
    "table{border-collapse:collapse;margin:1rem 0;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f3f3f3}"
    "td:first-child{text-align:left}.warn{background:#fee;padding:.5rem;border:1px solid #c00}"
    "figure{display:inline-block;margin:1rem}img{max-width:640px}"
)


def html_page(data: ReportData, images: dict[str, str]) -> str:
    """One file: tables and figures (PNG as data: URIs), no script, no external resource."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    banner = '<p class="warn">Scripted model in these runs: not a measurement.</p>' if data.scripted else ""
    banner += "".join(f"<p>Note: {html.escape(note)}</p>" for note in data.notes)
    head, rows = per_op_table(data)
    runs = html.escape(", ".join(data.runs))
    figs = "".join(
        f'<figure><img alt="{html.escape(n)}" src="data:image/png;base64,{b64}"><figcaption>{html.escape(n)}'
        "</figcaption></figure>"
        for n, b64 in images.items()
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>surfbench report</title>
<style>{CSS}</style></head><body>
<h1>surfbench report</h1><p>Runs: {runs}. Made {stamp}. Baseline: {html.escape(data.baseline)}.</p>
{banner}
<h2>Surfaces x models</h2>{_html_table(CELL_HEAD, cell_table(data))}
<h2>Paired against {html.escape(data.baseline)}</h2>{_html_table(PAIRED_HEAD, paired_table(data))}
<h2>Repeats: pass@k and pass^k</h2>{_html_table(PASS_K_HEAD, pass_k_table(data))}
<h2>First-try argument accuracy per operation (hottest first)</h2>{_html_table(head, rows)}
<h2>Error types: share of episodes with each</h2>{_html_table(*error_table(data))}
{_html_choices(data)}
<h2>Figures</h2>{figs}
</body></html>
"""


def _html_choices(data: ReportData) -> str:
    out = ""
    if data.picks:
        picks = _html_table(*picks_table(data.picks, _column_order, data.originals))
        out += f"<h2>Alternatives picked (one_of)</h2>{picks}"
    if data.access:
        out += f"<h2>First-try accuracy: read vs write</h2>{_html_table(ACCESS_HEAD, access_table(data.access))}"
    return out


def write_report(
    runs: Sequence[str | Path],
    out_dir: Path,
    baseline: str | None = None,
    keep_newest: bool = False,
    by_access: bool = False,
) -> tuple[Path, Path]:
    """Write report.md, report.html and the figures; return the two report paths.

    ``baseline``: the surface to pair against; None: ``full`` when the runs have it (see
    :func:`surfbench.bench.report_data.resolve_baseline`). ``by_access``: add first-try accuracy split by read
    and write operations. The runs are read and checked before anything is written.
    """
    data = collect(runs, baseline, keep_newest=keep_newest, by_access=by_access)
    out_dir.mkdir(parents=True, exist_ok=True)
    pngs = draw_all(data, out_dir)
    import base64

    images = {name: base64.b64encode(path.read_bytes()).decode() for name, path in pngs.items()}
    md_path = out_dir / "report.md"
    html_path = out_dir / "report.html"
    md_path.write_text(markdown(data, {n: p.name for n, p in pngs.items()}), encoding="utf-8")
    html_path.write_text(html_page(data, images), encoding="utf-8")
    return md_path, html_path


COMPACT = ("surface", "model", "prompt tok/step", "round trips (overhead)", "first-try args [95% CI]", "success")


def compact_table(markdown_text: str, columns: tuple[str, ...] = COMPACT) -> str:
    """The report's first table (surfaces x models) cut to the columns a reader compares first."""
    lines = [line for line in markdown_text.splitlines() if line.startswith("|")]
    if len(lines) < 3:
        return ""
    # the first table ends where the next one's header (the line above its |---| rule) begins
    end = next((i - 1 for i in range(2, len(lines)) if lines[i].startswith("|---")), len(lines))
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[:end] if not line.startswith("|---")]
    keep = [rows[0].index(c) for c in columns if c in rows[0]]
    picked = [[row[i] for i in keep] for row in rows]
    widths = [max(len(r[i]) for r in picked) for i in range(len(keep))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in picked]
    return "\n".join([text[0], "  ".join("-" * w for w in widths), *text[1:]])
