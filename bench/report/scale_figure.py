"""The scale figure: metrics against catalog size N (log x), one line per surface, 95% intervals.

Drawn when the report's runs hold cells of more than one catalog size (``surfbench run -m +sweep=scale``),
with the same numbers as a table (the report's "Catalog size" section). The points are computed once,
in :func:`surfbench.bench.report.report_data.collect`, from the episodes the report loaded.
A cell whose episodes were all predicted not to fit the model's context is drawn as an ``x`` on the
x axis and named in the legend ("does not fit"), not as a measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from surfbench.bench.analysis.metrics import wilson
from surfbench.bench.base.sections import Section
from surfbench.bench.contracts.records import EpisodeOutcome

if TYPE_CHECKING:
    import pandas as pd


def pyplot():  # type: ignore[no-untyped-def]
    """Matplotlib's pyplot on the Agg backend (no display), imported on first use: every report figure's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass(frozen=True)
class ScalePoint:
    """One (surface, model, N) cell of a scale sweep."""

    surface: str
    """Surface label."""
    model: str
    """Model label."""
    operations: int
    """Operations in the cell's catalog (N)."""
    episodes: int
    """Episodes of the cell."""
    does_not_fit: bool
    """Every episode was predicted not to fit the model's context (none was sent)."""
    first_try: tuple[float, float, float] | None
    """First-try argument accuracy and its 95% Wilson interval (None: no expected call)."""
    selection: tuple[float, float, float]
    """Tool selection accuracy and its 95% Wilson interval."""
    prompt_tokens_per_step: float | None
    """Mean prompt tokens per model call (None: no call was made)."""
    latency_s: float | None
    """Mean model latency per episode, seconds."""


def _rate(k: int, n: int) -> tuple[float, float, float]:
    low, high = wilson(k, n)
    return (k / n if n else 0.0, low, high)


def scale_points(frame: pd.DataFrame, sizes: dict[str, int]) -> list[ScalePoint]:
    """Points of every (surface, model, N) in ``frame`` (episode rows), N from ``sizes`` (cell_id -> N)."""
    if not len(frame):
        return []
    from surfbench.bench.suites.grow import base_label

    frame = frame.assign(catalog_size=frame["cell_id"].map(sizes), surface=frame["surface"].map(base_label))
    points = []
    for (surface, model, size), group in frame.groupby(["surface", "model", "catalog_size"], sort=True):
        never_sent = group["outcome"] == EpisodeOutcome.DOES_NOT_FIT  # the outcome column (bench.store.outcomes)
        unfit = bool(len(group)) and bool(never_sent.all())
        ran = group[~never_sent]
        calls = int(group["expected_calls"].fillna(0).sum())
        first = int(group["first_try_correct"].fillna(0).sum())
        tokens = ran["prompt_tokens_per_step"].dropna()
        points.append(
            ScalePoint(
                str(surface), str(model), int(size), len(group), unfit,
                _rate(first, calls) if calls else None,
                _rate(int(group["selection_correct"].fillna(False).astype(bool).sum()), len(group)),
                float(tokens.mean()) if len(tokens) else None,
                float(ran["latency_s"].mean()) if len(ran) else None,
            )
        )  # fmt: skip
    return points


def draw_scale(points: Sequence[ScalePoint], path: Path) -> Path:
    """Four panels against N: first-try accuracy, selection, prompt tokens per step, latency."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    panels = [
        ("first_try", "first-try argument accuracy (%)"),
        ("selection", "tool selection (%)"),
        ("prompt_tokens_per_step", "prompt tokens / step"),
        ("latency_s", "model latency / episode (s)"),
    ]
    lines = sorted({(p.surface, p.model) for p in points})
    # a colour per surface, a line style (and marker) per model: two models' lines of one surface pair up
    surfaces, models = sorted({s for s, _ in lines}), sorted({m for _, m in lines})
    drawn = []  # per line, once for the four panels: its points by N, legend label and style
    for surface, model in lines:
        i, j = surfaces.index(surface), models.index(model)
        mine = sorted((p for p in points if (p.surface, p.model) == (surface, model)), key=lambda p: p.operations)
        label = f"{surface} / {model}" if len(models) > 1 else surface
        style = {"color": f"C{i % 10}", "linestyle": ("-", "--", ":", "-.")[j % 4], "marker": "os^D"[j % 4]}
        drawn.append((mine, label, style))
    for ax, (attr, title) in zip(axes.flat, panels, strict=True):
        for mine, label, style in drawn:
            xs, ys, lo, hi = [], [], [], []
            for p in mine:
                value = getattr(p, attr)
                if p.does_not_fit or value is None:
                    continue
                v = value[0] if isinstance(value, tuple) else value
                scale = 100.0 if isinstance(value, tuple) else 1.0
                xs.append(p.operations)
                ys.append(v * scale)
                lo.append((v - value[1]) * scale if isinstance(value, tuple) else 0.0)
                hi.append((value[2] - v) * scale if isinstance(value, tuple) else 0.0)
            ax.errorbar(xs, ys, yerr=[lo, hi], label=label, capsize=3, **style)
            unfit = [p.operations for p in mine if p.does_not_fit]
            if unfit:  # one legend entry for every such marker (below), not one per line
                ax.plot(unfit, [0] * len(unfit), "x", color=style["color"], markersize=9, label="_unfit")
        ax.set_xscale("log")
        ax.set_xlabel("operations in the catalog (N)")
        ax.set_title(title, fontsize=9)
    # the legend below the panels, where it hides no point; x markers explained once
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if any(p.does_not_fit for p in points):
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], marker="x", color="grey", linestyle="none", markersize=9))
        labels.append("x at 0: does not fit the context (no episode sent)")
    ncol = 3
    rows = -(-len(labels) // ncol)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    fig.suptitle("Catalog size: accuracy and cost against N")
    fig.tight_layout(rect=(0, min(0.45, 0.03 * rows + 0.02), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def scale_figures(points: Sequence[ScalePoint], out_dir: Path) -> dict[str, Path]:
    """``{"metrics against catalog size": png}`` when the points span more than one catalog size, else ``{}``."""
    if len({p.operations for p in points}) < 2:
        return {}
    return {"metrics against catalog size": draw_scale(points, out_dir / "scale.png")}


SCALE_HEAD = ["model", "surface", "operations (N)", "episodes", "first-try args [95% CI]", "selection",
              "prompt tok/step", "latency / episode"]  # fmt: skip


def _pct(value: tuple[float, float, float] | None) -> str:
    return "-" if value is None else f"{value[0]:.0%} [{value[1]:.0%}, {value[2]:.0%}]"


def scale_rows(points: Sequence[ScalePoint]) -> list[list[str]]:
    """The figure's numbers as table rows: per model and surface, N ascending; "does not fit" named."""
    rows = []
    for p in sorted(points, key=lambda p: (p.model, p.surface, p.operations)):
        if p.does_not_fit:
            rows.append([p.model, p.surface, f"{p.operations:,}", str(p.episodes), "does not fit", "-", "-", "-"])
            continue
        tokens = "-" if p.prompt_tokens_per_step is None else f"{p.prompt_tokens_per_step:,.0f}"
        latency = "-" if p.latency_s is None else f"{p.latency_s:.1f} s"
        rows.append([p.model, p.surface, f"{p.operations:,}", str(p.episodes), _pct(p.first_try),
                     f"{p.selection[0]:.0%}", tokens, latency])  # fmt: skip
    return rows


def scale_section(points: Sequence[ScalePoint]) -> list[Section]:
    """The report's "Catalog size" section (runs with more than one catalog size), else nothing."""
    if len({p.operations for p in points}) < 2:
        return []
    text = (
        "Each surface against the number of operations in the catalog (the suite's own "
        'plus seeded distractors, `catalog.grow`). "does not fit": the first request was predicted not to '
        "fit the model's context, and no episode was sent."
    )
    return [Section("Catalog size", text, (SCALE_HEAD, scale_rows(points)))]
