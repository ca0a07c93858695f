"""The episodes' ``outcome`` read back typed, and the legacy path for runs recorded before the column.

Since records v8 each episode row holds how the episode ended (``outcome``, an
:class:`~surfbench.bench.contracts.records.EpisodeOutcome` the scorer typed from the trace: ``ran``,
``does_not_fit``, ``context_overflow``, ``harness_error``). :func:`surfbench.bench.store.results.load_runs`, under
every reader of a run folder, gives the column as enum members through :func:`with_outcomes`; a row recorded
before the column (every run in ``results/reference/``; a part ``surfbench migrate`` rewrote holds it null) gets
it here, in this one place, from the start of its error text (:func:`legacy_outcome`). No other module reads the
error text to decide how an episode ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.contracts.records import EpisodeOutcome

if TYPE_CHECKING:
    import pandas as pd

LEGACY_DOES_NOT_FIT = "does not fit:"
"""LEGACY: how a does-not-fit episode's error starts (``FitPrediction.why``, bench/catalog/provider_limits.py)."""

LEGACY_CONTEXT_WINDOW = "ContextWindowExceeded"
"""LEGACY: LiteLLM's exception for a request over the window, named in the error of a context overflow recorded
before it had its own error type (the endpoint's ``ModelError`` wrapped it)."""


def legacy_outcome(error: object) -> EpisodeOutcome:
    """LEGACY: how an episode recorded before records v8 ended, from its error text.

    The rule the scorer and the reports applied then: no error, it ran; ``does not fit: ...``, it was never sent;
    an error naming ``context_overflow`` or LiteLLM's ``ContextWindowExceeded``, the context overflowed; any other,
    a harness error.
    """
    if not isinstance(error, str) or not error:
        return EpisodeOutcome.RAN
    if error.startswith(LEGACY_DOES_NOT_FIT):
        return EpisodeOutcome.DOES_NOT_FIT
    if ErrorType.CONTEXT_OVERFLOW in error or LEGACY_CONTEXT_WINDOW in error:
        return EpisodeOutcome.CONTEXT_OVERFLOW
    return EpisodeOutcome.HARNESS_ERROR


def typed_outcome(recorded: object, error: object) -> EpisodeOutcome:
    """One row's outcome: the recorded value as the enum; without one (LEGACY, before records v8), from its error."""
    return EpisodeOutcome(recorded) if isinstance(recorded, str) and recorded else legacy_outcome(error)


def with_outcomes(frame: pd.DataFrame) -> pd.DataFrame:
    """The episodes ``frame`` with its ``outcome`` column as :class:`EpisodeOutcome` members (changed in place).

    A row whose part lacks the column, or holds it null, takes the legacy path (:func:`legacy_outcome`).
    """
    import pandas as pd

    size = len(frame)
    recorded = frame["outcome"].tolist() if "outcome" in frame.columns else [None] * size
    errors = frame["error"].tolist() if "error" in frame.columns else [None] * size
    outcomes = [typed_outcome(o, e) for o, e in zip(recorded, errors, strict=True)]
    frame["outcome"] = pd.Series(outcomes, index=frame.index, dtype=object)
    return frame
