"""The score stage: one episode's outcome.

Scoring one episode: success, first-try argument accuracy and the error types (``scorer``), and stuck-loop
detection (``stuck``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.score.scorer import (
        EpisodeScore as EpisodeScore,
    )
    from surfbench.bench.score.scorer import (
        FirstTry as FirstTry,
    )
    from surfbench.bench.score.scorer import (
        score_episode as score_episode,
    )

EXPORTS = {
    "EpisodeScore": "scorer",
    "FirstTry": "scorer",
    "score_episode": "scorer",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
