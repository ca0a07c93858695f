"""The prompt-cache room: what each provider's prompt cache would serve, write and cost for the requests a run sent.

A feature room (tests/test_layers.py, ``ROOMS``) with a place in the flow (``ROOM_PLACE``: the analysis stage),
as the report and the gate read it: it imports the stages up to the analysis (the store's run folders, the model
stage's cache profiles and request segments, the metric registry) and nothing later, and the stages after it (the
report, the viewer, the front ends) import it, as does the server-benchmark room (``ROOM_IMPORTS``). The cache
model, each profile replayed over a cell's requests in order (``prompt_cache_model``), the requests a run sent,
per cell, from its steps or rebuilt from its transcripts, and each cell's numbers and effective costs under each
profile (``prompt_cache_requests``: what the gate's effective-cost criteria read), and the report's parts: the
effective columns, the caching and cache-break tables and the rank sentences (``prompt_cache_section``). The
provider profiles themselves stay in the model stage (bench.models.cache_profiles), which checks a model
config's overrides; the response cache (bench.models.cache) is another cache altogether.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.promptcache.prompt_cache_model import CacheCell as CacheCell
    from surfbench.bench.promptcache.prompt_cache_model import Request as Request
    from surfbench.bench.promptcache.prompt_cache_model import Segment as Segment
    from surfbench.bench.promptcache.prompt_cache_model import StepCache as StepCache
    from surfbench.bench.promptcache.prompt_cache_model import simulate as simulate
    from surfbench.bench.promptcache.prompt_cache_model import slot_cache_counts as slot_cache_counts
    from surfbench.bench.promptcache.prompt_cache_model import summarize as summarize
    from surfbench.bench.promptcache.prompt_cache_requests import CellCache as CellCache
    from surfbench.bench.promptcache.prompt_cache_requests import cache_cells as cache_cells
    from surfbench.bench.promptcache.prompt_cache_requests import effective_costs as effective_costs
    from surfbench.bench.promptcache.prompt_cache_requests import run_requests as run_requests
    from surfbench.bench.promptcache.prompt_cache_section import cache_sections as cache_sections

EXPORTS = {
    "CacheCell": "prompt_cache_model",
    "CellCache": "prompt_cache_requests",
    "Request": "prompt_cache_model",
    "Segment": "prompt_cache_model",
    "StepCache": "prompt_cache_model",
    "cache_cells": "prompt_cache_requests",
    "cache_sections": "prompt_cache_section",
    "effective_costs": "prompt_cache_requests",
    "run_requests": "prompt_cache_requests",
    "simulate": "prompt_cache_model",
    "slot_cache_counts": "prompt_cache_model",
    "summarize": "prompt_cache_model",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
