"""The analysis stage: metrics, comparisons and power over stored runs.

Analysis of stored runs: per-cell metrics with intervals (``metrics``), paired comparisons (``compare``),
power and plans (``power``), the retrieval funnel (``funnel``, ``retrieval_eval``), multi-call tasks
(``multicall``), what-if replays (``whatif``, ``replay``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.analysis.compare import PairedDelta as PairedDelta
    from surfbench.bench.analysis.compare import paired_comparisons as paired_comparisons
    from surfbench.bench.analysis.metrics import Metric as Metric
    from surfbench.bench.analysis.metrics import summarize_cell as summarize_cell
    from surfbench.bench.analysis.metrics import wilson as wilson
    from surfbench.bench.analysis.power import (
        Plan as Plan,
    )
    from surfbench.bench.analysis.power import (
        mde_paired as mde_paired,
    )
    from surfbench.bench.analysis.power import (
        pairs_needed as pairs_needed,
    )
    from surfbench.bench.analysis.power import (
        plan as plan,
    )

EXPORTS = {
    "Metric": "metrics",
    "PairedDelta": "compare",
    "Plan": "power",
    "mde_paired": "power",
    "paired_comparisons": "compare",
    "pairs_needed": "power",
    "plan": "power",
    "summarize_cell": "metrics",
    "wilson": "metrics",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
