"""``surfbench report RUN...``: a markdown report and one self-contained HTML file.

Per suite x surface x model x mode: tools, tool-block bytes and tokens, ratio vs the baseline, prompt
tokens per step, round trips and overhead round trips, first-try argument accuracy with its 95%
interval, tool selection, success, recovered-after-error, violations, latency; a paired comparison
against the baseline surface (McNemar on success, paired bootstrap on first-try accuracy);
per-operation first-try accuracy, hottest operations first; the choice, funnel, multi-call and catalog-size
tables where the runs have them; the figures. Both files render one list of sections (:func:`report_sections`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from surfbench.bench.analysis.funnel import funnel_section
from surfbench.bench.analysis.multicall import multicall_section
from surfbench.bench.base.sections import Section
from surfbench.bench.promptcache.prompt_cache_section import cache_sections
from surfbench.bench.report.figures import draw_all
from surfbench.bench.report.report_choices import ACCESS_HEAD, access_table, picks_table
from surfbench.bench.report.report_data import (
    KIND_ORDER,
    PAIRED_HEAD,
    PASS_K_HEAD,
    CellRow,
    ReportData,
    cell_head,
    cell_table,
    collect,
    error_table,
    paired_table,
    pass_k_table,
    per_op_table,
)
from surfbench.bench.report.scale_figure import scale_section
from surfbench.bench.report.viewer_links import link_cells_table, link_per_op_table, viewer_base


def report_sections(data: ReportData, figures: Mapping[str, str], viewer: str | None = None) -> list[Section]:
    """Every ``##`` section of the report, in order: report.md and report.html both render this one list.

    ``figures``: figure title -> image path relative to the report. A section with nothing to show is left out.
    ``viewer``: the viewer's address (bench.report.viewer_links): the cells and per-operation tables link to it.
    """
    head = cell_head(data)  # CELL_HEAD and the optional columns (partial credit, policy) some cell has
    cells = link_cells_table(cell_table(data, optional=True), data.cells, head, viewer)
    sections = [Section("Surfaces x models", uneven_cells_note(data), table=(head, cells))]
    if data.paired:
        sections.append(
            Section(
                f"Paired against `{data.baseline}` (same tasks)",
                "Success: McNemar's exact test on discordant "
                "pairs. First-try argument accuracy: difference with a 95% paired-bootstrap interval. MDE: the "
                "smallest difference these pairs detect at 80% power, 5% two-sided; a smaller difference can "
                "neither be shown nor ruled out here (`surfbench plan` says what would).",
                (PAIRED_HEAD, paired_table(data)),
            )
        )
    pk_rows = pass_k_table(data)
    if pk_rows:
        sections.append(
            Section(
                "Repeats: pass@k and pass^k",
                "pass@k: at least one of k repeats succeeds; pass^k: all k succeed (tau-bench). Wilson intervals "
                "over tasks.",
                (PASS_K_HEAD, pk_rows),
            )
        )
    op_head, op_rows = per_op_table(data)
    op_rows = link_per_op_table(op_head, op_rows, data.cells, data.originals, viewer)
    sections.append(Section("First-try argument accuracy per operation (hottest first)", table=(op_head, op_rows)))
    err_head, err_rows = error_table(data)
    if err_rows:
        sections.append(
            Section(
                "Error types: share of episodes with each (at least once)",
                "Suite-specific failure modes (e.g. the workspace suite's `steps_and_pipe`, `pipe_for_steps`, "
                "`steps_for_pipe`, `inline_reimplementation`) appear here with the scorer's own types.",
                (err_head, err_rows),
            )
        )
    sections += choice_sections(data)
    sections += funnel_section(data.funnel)  # preselect, search, lazy: where tasks are lost (bench.analysis.funnel)
    sections += multicall_section(data.multicall, data.baseline)  # round trips where one program could save calls
    sections += scale_section(data.scale)  # runs with more than one catalog size: the scale figure's numbers
    sections += cache_sections(data.cells, data.cache)  # modelled prompt caching (bench.promptcache)
    if figures:
        sections.append(Section("Figures", figures=tuple(figures.items())))
    return [section for section in sections if not section.empty]  # e.g. per operation, without expected calls


def uneven_cells_note(data: ReportData) -> str:
    """A warning when a suite's cells ran different tasks (a run stopped early).

    Their rows then average over different tasks, and only the paired table compares like with like. Repeats do
    not count: the task ids do.
    """
    by_suite: dict[str, list[CellRow]] = {}
    for cell in data.cells:
        by_suite.setdefault(str(cell.keys.get("suite", "")), []).append(cell)
    notes = []
    for suite, cells in by_suite.items():
        if len({c.tasks for c in cells}) > 1:
            models = len({c.keys.get("model") for c in cells}) > 1
            counts = ", ".join(
                f"{c.keys.get('surface')}{' (' + str(c.keys.get('model')) + ')' if models else ''} {len(c.tasks)}"
                for c in cells
            )
            where = f" in {suite}" if len(by_suite) > 1 else ""
            notes.append(
                f"**Cells ran different tasks{where}** (a run stopped early, by hand or by a sequential decision; "
                f"tasks per cell: {counts}). Their rows average over different tasks and do not compare; the paired "
                "table compares the tasks both cells ran."
            )
    return "\n\n".join(notes)


def markdown(data: ReportData, figures: Mapping[str, str], viewer: str | None = None) -> str:
    """The report as markdown; ``figures``: figure title -> image path relative to the report."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# surfbench report\n\nRuns: {', '.join(data.runs)}. Made {stamp}. Baseline surface: `{data.baseline}`."]
    if data.scripted:
        parts.append("> **Scripted model in these runs: not a measurement.**")
    parts += [f"> Note: {note}" for note in data.notes]
    parts += [section.markdown() for section in report_sections(data, figures, viewer)]
    return "\n\n".join(parts) + "\n"


def _column_order(col: tuple[str, str]) -> tuple[str, int, str]:
    return col[1], KIND_ORDER.get(col[0], 9), col[0]


def choice_sections(data: ReportData) -> list[Section]:
    """The alternatives-picked table (when a suite has ``one_of`` calls) and the read/write split (when asked)."""
    parts = []
    if data.picks:
        parts.append(
            Section(
                "Alternatives picked (`one_of`)",
                "Per expected call with alternatives: the episodes whose first "
                "attempt called each alternative (`none`: no alternative was called).",
                picks_table(data.picks, _column_order, data.originals),
            )
        )
    if data.access:
        parts.append(
            Section(
                "First-try argument accuracy: read vs write operations",
                "Read: operations the catalog marks read-only (MCP `readOnlyHint`); write: every other.",
                (ACCESS_HEAD, access_table(data.access)),
            )
        )
    return parts


CSS = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
    "table{border-collapse:collapse;margin:1rem 0;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f3f3f3}"
    "td:first-child{text-align:left}.warn{background:#fee;padding:.5rem;border:1px solid #c00}"
    "figure{display:inline-block;margin:1rem}img{max-width:640px}"
    ".scroll{overflow-x:auto;max-width:100%}"
)


def html_page(
    data: ReportData, images: Mapping[str, str], figures: Mapping[str, str] | None = None, viewer: str | None = None
) -> str:
    """One file: the sections of :func:`report_sections`, figures as PNG ``data:`` URIs, no script or external link.

    ``images``: figure title -> base64 PNG; ``figures``: figure title -> image path (default: ``images``' titles).
    """
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    banner = '<p class="warn">Scripted model in these runs: not a measurement.</p>' if data.scripted else ""
    banner += "".join(f"<p>Note: {html.escape(note)}</p>" for note in data.notes)
    runs = html.escape(", ".join(data.runs))
    sections = report_sections(data, {n: n for n in images} if figures is None else figures, viewer)
    body = "\n".join(section.html(images) for section in sections)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>surfbench report</title>
<style>{CSS}</style></head><body>
<h1>surfbench report</h1><p>Runs: {runs}. Made {stamp}. Baseline surface: <code>{html.escape(data.baseline)}</code>.</p>
{banner}
{body}
</body></html>
"""


def write_report(
    runs: Sequence[str | Path],
    out_dir: Path,
    baseline: str | None = None,
    keep_newest: bool = False,
    by_access: bool = False,
    viewer_url: str | None = None,
) -> tuple[Path, Path]:
    """Write report.md, report.html and the figures; return the two report paths.

    ``baseline``: the surface to pair against; None: ``full`` when the runs have it (see
    :func:`surfbench.bench.report.report_data.resolve_baseline`). ``by_access``: add first-try accuracy split by read
    and write operations. ``viewer_url``: link the tables to the viewer's pages there (None: ``SURFBENCH_VIEWER_URL``,
    else no links; bench.report.viewer_links). The runs are read and checked before anything is written.
    """
    viewer = viewer_base(viewer_url)
    data = collect(runs, baseline, keep_newest=keep_newest, by_access=by_access)
    out_dir.mkdir(parents=True, exist_ok=True)
    pngs = draw_all(data, out_dir)
    import base64

    images = {name: base64.b64encode(path.read_bytes()).decode() for name, path in pngs.items()}
    md_path = out_dir / "report.md"
    html_path = out_dir / "report.html"
    figures = {n: p.name for n, p in pngs.items()}
    md_path.write_text(markdown(data, figures, viewer), encoding="utf-8")
    html_path.write_text(html_page(data, images, figures, viewer), encoding="utf-8")
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
