"""What ``surfbench gate`` returns: its exit code over several candidates, its JSON, its refusal to judge a script.

Exit code, over every candidate judged: 0 only when every candidate ships, 1 when the worst is revise, 2 when
any closes (and 2 for an error, and for runs of a scripted model without ``--allow-scripted``). The worst
decision, not the best: a gate in CI that exits 0 must mean that nothing it judged failed, so three candidates
that close and one that ships do not pass as "ship". The decision of each candidate is in the table and, one
per candidate with its own code, in ``--json``.

A scripted model (``provider: scripted``, e.g. the oracle that replays the tasks' reference calls) measures the
harness, not a surface. The gate reads that from the run folders' run.json (each recorded cell's ``provider``),
never from today's configs: such runs get one warning line and exit 2, no decision, unless ``--allow-scripted``
(a plumbing check), which judges them with the warning on top of the table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

EXIT = {"ship": 0, "revise": 1, "close": 2}
"""The exit code of one decision."""
EXIT_REFUSED = 2
"""No decision: an error, or runs of a scripted model judged without ``--allow-scripted``."""


def worst_exit(decisions: Iterable[str]) -> int:
    """0 when every decision is ship, 1 when the worst is revise, 2 when any is close (or there is none)."""
    codes = [EXIT[d] for d in decisions]
    return max(codes) if codes else EXIT_REFUSED


def scripted_warning(models: Sequence[str], *, allowed: bool) -> str:
    """The one line said about runs of a scripted model: refused (default), or judged with ``--allow-scripted``."""
    which = ", ".join(models)
    what = (
        f"the runs hold episodes of a scripted model ({which}): it replays the tasks' reference calls, so its "
        "numbers measure the harness, not the surface"
    )
    if allowed:
        return f"warning: {what}; judged anyway (--allow-scripted): a plumbing check, not a decision to act on"
    return f"surfbench gate: warning: {what}; no decision (exit 2). Add --allow-scripted to judge them anyway."


def gate_json(
    name: str,
    baseline: str,
    decisions: Mapping[str, str],
    per_model: Mapping[tuple[str, str], str],
    scripted: Sequence[str],
) -> str:
    """The decisions as one JSON object: one entry per candidate (its decision, exit code, decision per model)."""
    candidates = {
        cand: {
            "decision": decision,
            "exit_code": EXIT[decision],
            "models": {m: d for (c, m), d in sorted(per_model.items()) if c == cand},
        }
        for cand, decision in decisions.items()
    }
    out = {
        "gate": name,
        "baseline": baseline,
        "exit_code": worst_exit(decisions.values()),
        "candidates": candidates,
        "scripted": list(scripted),
    }
    return json.dumps(out, indent=2, sort_keys=False)
