"""The report stage: reports and gates from run folders only.

Reports and gates: the report's data, sections, figures and pages (``report_data``, ``report``, ``figures``,
``scale_figure``, ``report_choices``), the static surface report (``surface_report``), and the gate with its
criteria files (``gate``, ``gate_criteria``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.report.gate import (
        GateResult as GateResult,
    )
    from surfbench.bench.report.gate import (
        Verdict as Verdict,
    )
    from surfbench.bench.report.gate import (
        format_gate as format_gate,
    )
    from surfbench.bench.report.gate import (
        judge as judge,
    )
    from surfbench.bench.report.report import report_sections as report_sections
    from surfbench.bench.report.report import write_report as write_report

EXPORTS = {
    "GateResult": "gate",
    "Verdict": "gate",
    "format_gate": "gate",
    "judge": "gate",
    "report_sections": "report",
    "write_report": "report",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
