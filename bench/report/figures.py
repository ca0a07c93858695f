"""The report's figures (matplotlib, Agg): the Pareto picture, accuracy by model size, per-op heatmap."""

from __future__ import annotations

from pathlib import Path

from surfbench.bench.report.report_data import ReportData, per_op_table
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


def pareto(data: ReportData, path: Path) -> Path:
    """Prompt tokens per step vs first-try argument accuracy; one marker per surface, one color per model."""
    plt = _plt()
    key, label = _accuracy(data)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    models = sorted({str(c.keys["model"]) for c in data.cells})
    markers = "os^Dvx*P"
    surfaces = sorted({str(c.keys["surface"]) for c in data.cells})
    plotted = 0
    for cell in data.cells:
        tokens, acc = cell.summary.prompt_tokens_per_step, cell.summary.metric(key)
        if not tokens or acc is None:
            continue
        m = models.index(str(cell.keys["model"]))
        k = surfaces.index(str(cell.keys["surface"]))
        ax.scatter(tokens, 100 * acc, color=f"C{m}", marker=markers[k % 8], s=60)
        ax.annotate(str(cell.keys["surface"]), (tokens, 100 * acc),
                    fontsize=7, xytext=(4, 3), textcoords="offset points")  # fmt: skip
        plotted += 1
    for m, model in enumerate(models):
        ax.scatter([], [], color=f"C{m}", label=model)
    if plotted:
        ax.set_xscale("log")
    ax.set_ylim(-3, 103)
    ax.set_xlabel("prompt tokens per step (log)")
    ax.set_ylabel(f"{label} (%)")
    ax.set_title(f"Tokens vs {label}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def by_size(data: ReportData, path: Path) -> Path:
    """First-try accuracy by model size (parameters), one line per surface."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    key, label = _accuracy(data)
    series: dict[str, list[tuple[float, float]]] = {}
    for cell in data.cells:
        size, acc = cell.keys["params_b"], cell.summary.metric(key)
        if acc is None or size is None or size != size:  # NaN check
            continue
        series.setdefault(str(cell.keys["surface"]), []).append((float(size), 100 * acc))
    for i, (surface, points) in enumerate(sorted(series.items())):
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=f"C{i}", label=surface)
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
    figures = {
        "tokens vs accuracy": pareto(data, out_dir / "pareto.png"),
        "accuracy by model size": by_size(data, out_dir / "by_size.png"),
    }
    if any(table for table in data.per_op.values()):  # suites with expected calls only
        figures["per-operation heatmap"] = heatmap(data, out_dir / "per_op_heatmap.png")
    figures.update(
        scale_figures(data.scale, out_dir)
    )  # a scale sweep's runs: metrics against N (bench.report.scale_figure)
    return figures
