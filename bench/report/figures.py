"""The report's figures (matplotlib, Agg): the Pareto picture, accuracy by model size, per-op heatmap."""

from __future__ import annotations

from pathlib import Path

from surfbench.bench.analysis.metrics import wilson
from surfbench.bench.report.report_data import CellRow, ReportData, per_op_table
from surfbench.bench.report.scale_figure import pyplot as _plt
from surfbench.bench.report.scale_figure import scale_figures


def _accuracy(data: ReportData) -> tuple[str, str]:
    """The accuracy the figures plot: first-try argument accuracy, or task success where no cell has one.

    Suites without expected calls (judged on final state or answer only, like workspace) have no
    first tries.
    """
    if any(c.summary.first_try_accuracy is not None for c in data.cells):
        return "first_try_accuracy", "first-try argument accuracy"
    return "success_rate", "task success"


def interval(cell: CellRow, key: str) -> tuple[float, float, float] | None:
    """A cell's accuracy on the figures' axis and its 95% interval (Wilson), in percent; None without one.

    First-try accuracy has its interval in the summary (over expected calls); task success gets the Wilson
    interval over the cell's episodes.
    """
    s = cell.summary
    value = s.metric(key)
    if value is None:
        return None
    if key == "first_try_accuracy":
        low, high = s.first_try_ci_low, s.first_try_ci_high
    else:
        low, high = wilson(round(value * s.episodes), s.episodes)
    if low is None or high is None or low != low or high != high:  # NaN: no interval, the point is not drawn
        return None
    return 100 * value, 100 * low, 100 * high


def sizes(data: ReportData) -> set[float]:
    """The model sizes (billions of parameters) of the cells that have an accuracy to plot."""
    key, _ = _accuracy(data)
    out = set()
    for cell in data.cells:
        size = cell.keys["params_b"]
        if size is not None and size == size and cell.summary.metric(key) is not None:
            out.add(float(size))
    return out


def pareto(data: ReportData, path: Path) -> Path:
    """Prompt tokens per step vs first-try argument accuracy; one marker per surface, one color per model.

    Each point carries its 95% interval as a vertical error bar.
    """
    plt = _plt()
    key, label = _accuracy(data)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    models = sorted({str(c.keys["model"]) for c in data.cells})
    markers = "os^Dvx*P"
    surfaces = sorted({str(c.keys["surface"]) for c in data.cells})
    plotted = 0
    for cell in data.cells:
        tokens, point = cell.summary.prompt_tokens_per_step, interval(cell, key)
        if not tokens or point is None:
            continue
        m = models.index(str(cell.keys["model"]))
        k = surfaces.index(str(cell.keys["surface"]))
        acc, low, high = point
        # a point on its bound (100% of 5) can sit a rounding error outside it: matplotlib refuses negative bars
        bar = [[max(acc - low, 0.0)], [max(high - acc, 0.0)]]
        ax.errorbar(tokens, acc, yerr=bar, color=f"C{m}", marker=markers[k % 8],
                    markersize=7, capsize=3, elinewidth=1)  # fmt: skip
        ax.annotate(str(cell.keys["surface"]), (tokens, acc),
                    fontsize=7, xytext=(4, 3), textcoords="offset points")  # fmt: skip
        plotted += 1
    for m, model in enumerate(models):
        ax.scatter([], [], color=f"C{m}", label=model)
    if plotted:
        ax.set_xscale("log")
    ax.set_ylim(-3, 103)
    ax.set_xlabel("prompt tokens per step (log)")
    ax.set_ylabel(f"{label} (%)")
    ax.set_title(f"Tokens vs {label} (bars: 95% intervals)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def by_size(data: ReportData, path: Path) -> Path:
    """First-try accuracy by model size (parameters), one line per surface, each point with its 95% interval."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    key, label = _accuracy(data)
    series: dict[str, list[tuple[float, float, float, float]]] = {}
    for cell in data.cells:
        size, point = cell.keys["params_b"], interval(cell, key)
        if point is None or size is None or size != size:  # NaN check
            continue
        series.setdefault(str(cell.keys["surface"]), []).append((float(size), *point))
    for i, (surface, points) in enumerate(sorted(series.items())):
        points.sort()
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        bars = [[max(p[1] - p[2], 0.0) for p in points], [max(p[3] - p[1], 0.0) for p in points]]
        ax.errorbar(xs, ys, yerr=bars, marker="o", color=f"C{i}", label=surface, capsize=3)
    ax.set_ylim(-3, 103)
    ax.set_xlabel("model parameters (billions)")
    ax.set_ylabel(f"{label} (%)")
    ax.set_title(f"{label.capitalize()} by model size, per surface")
    if series:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def heatmap(data: ReportData, path: Path, max_ops: int = 40) -> Path:
    """Per-operation first-try accuracy, hottest operations first (rows) x surface/model (columns)."""
    import numpy as np

    plt = _plt()
    head, rows = per_op_table(data)
    rows = [r for r in rows if any(r[2:])][:max_ops]
    values = np.full((len(rows), len(head) - 2), np.nan)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row[2:]):
            if cell:
                c, n = (int(x) for x in cell.split("/"))
                values[i, j] = c / n
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * values.shape[1] + 3), max(3, 0.22 * len(rows) + 1.5)))
    im = ax.imshow(values, aspect="auto", cmap="RdYlGn", vmin=0, vmax=1)
    ax.set_yticks(range(len(rows)), [f"{r[0]}{' *' if r[1] else ''}" for r in rows], fontsize=6)
    ax.set_xticks(range(len(head) - 2), head[2:], fontsize=6, rotation=45, ha="right")
    ax.set_title("First-try accuracy per operation (* = hot)")
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_all(data: ReportData, out_dir: Path) -> dict[str, Path]:
    """Draw the report's figures into ``out_dir``; figure title -> PNG path (none without cells)."""
    if not data.cells:
        return {}
    figures = {"tokens vs accuracy": pareto(data, out_dir / "pareto.png")}
    if len(sizes(data)) >= 2:  # a figure by size needs two sizes to compare
        figures["accuracy by model size"] = by_size(data, out_dir / "by_size.png")
    else:  # one drawn for an earlier report into this folder is not this report's
        (out_dir / "by_size.png").unlink(missing_ok=True)
    if any(table for table in data.per_op.values()):  # suites with expected calls only
        figures["per-operation heatmap"] = heatmap(data, out_dir / "per_op_heatmap.png")
    figures.update(
        scale_figures(data.scale, out_dir)
    )  # a scale sweep's runs: metrics against N (bench.report.scale_figure)
    return figures
