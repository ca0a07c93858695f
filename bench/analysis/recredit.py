"""Partial and efficient credit recomputed for a recorded run, without a model (``surfbench migrate --credit``).

The credit columns of the episodes table (``call_share``, ``state_share``, ``min_round_trips``, ``efficiency``
and the policy counts; :mod:`surfbench.bench.score.credit`) are computed when an episode is recorded. When their
definition changes (2026-12-06: ``min_round_trips`` is capped by the suite's step budget, so a BFCL single-turn
episode solved in its one call has efficiency 1, not 2), a recorded run keeps the old values; this recomputes them
from the recorded steps and calls, replayed on a fresh backend (:mod:`surfbench.bench.analysis.replay`).

An episode is recomputed only where its whole replay reproduces its recorded scores (:func:`replay.self_check`):
a task edited since the run, or a backend that does not replay the same way, is reported and left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from surfbench.bench.analysis.replay import Suites, load_episodes, rescore, same_value, self_check
from surfbench.bench.score.credit import episode_credit

CREDIT_COLUMNS = (
    "call_share", "state_share", "min_round_trips", "efficiency", "policy_denials", "policy_asked", "policy_recovered",
)  # fmt: skip
"""The episodes table's columns :func:`surfbench.bench.score.credit.episode_credit` fills."""


@dataclass
class Recredit:
    """What recomputing a run's credit found."""

    episodes: int = 0
    changes: dict[str, dict[str, object]] = field(default_factory=dict)
    """New values by episode key, only the columns that differ from the recorded ones."""
    skipped: list[str] = field(default_factory=list)
    """Episodes left as they were, each with why."""


def recredit(run: str | Path) -> Recredit:
    """The credit columns of every episode of ``run`` as today's definitions give them (nothing is written)."""
    out = Recredit()
    suites = Suites()
    for episode in load_episodes(run):
        out.episodes += 1
        row = episode.row
        found = suites.task(str(row.get("suite")), str(row.get("task_id")))
        if isinstance(found, str):
            out.skipped.append(f"{episode.key}: {found}")
            continue
        suite, task = found
        whole = rescore(suite, task, episode)
        differs = self_check(episode, whole) + list(whole.diverged)
        if differs:
            out.skipped.append(f"{episode.key}: the replay does not reproduce the recorded {', '.join(differs)}")
            continue
        policed = row.get("policy_denials") is not None  # recorded under an operation policy
        credit = episode_credit(
            task, whole.trace, bool(row.get("success")), policed=policed, budget=(suite.max_steps, suite.steps_per)
        )
        new = {name: getattr(credit, name) for name in CREDIT_COLUMNS}
        changed = {k: v for k, v in new.items() if not same_value(v, row.get(k))}
        if changed:
            out.changes[episode.key] = changed
    return out
