"""The contracts stage: what surfaces, backends and plugins are written against.

The contracts surfaces, backends, programs and plugins are written against: ``Surface`` and ``Session``
(``surface``), ``Backend`` (``backend``), code mode's ``ProgramDispatch`` (``program``), the records an
episode leaves (``records``), and the one plugin registry (``plugins``; surfaces by name in ``registry``).
``surfaces/`` imports only this stage and the ones before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.contracts.backend import (
        Backend as Backend,
    )
    from surfbench.bench.contracts.backend import (
        CannedBackend as CannedBackend,
    )
    from surfbench.bench.contracts.backend import (
        OperationBackend as OperationBackend,
    )
    from surfbench.bench.contracts.plugins import UnknownPlugin as UnknownPlugin
    from surfbench.bench.contracts.plugins import lookup as lookup
    from surfbench.bench.contracts.plugins import register as register
    from surfbench.bench.contracts.program import ProgramDispatch as ProgramDispatch
    from surfbench.bench.contracts.program import ProgramResult as ProgramResult
    from surfbench.bench.contracts.records import (
        CallRecord as CallRecord,
    )
    from surfbench.bench.contracts.records import (
        EpisodeOutcome as EpisodeOutcome,
    )
    from surfbench.bench.contracts.records import (
        EpisodeTrace as EpisodeTrace,
    )
    from surfbench.bench.contracts.records import (
        StepRecord as StepRecord,
    )
    from surfbench.bench.contracts.registry import build_surface as build_surface
    from surfbench.bench.contracts.registry import surface_class as surface_class
    from surfbench.bench.contracts.surface import (
        Dispatch as Dispatch,
    )
    from surfbench.bench.contracts.surface import (
        Session as Session,
    )
    from surfbench.bench.contracts.surface import (
        Surface as Surface,
    )
    from surfbench.bench.contracts.surface import (
        ToolCall as ToolCall,
    )
    from surfbench.bench.contracts.surface import (
        ToolSpec as ToolSpec,
    )

EXPORTS = {
    "Backend": "backend",
    "CallRecord": "records",
    "CannedBackend": "backend",
    "Dispatch": "surface",
    "EpisodeOutcome": "records",
    "EpisodeTrace": "records",
    "OperationBackend": "backend",
    "ProgramDispatch": "program",
    "ProgramResult": "program",
    "Session": "surface",
    "StepRecord": "records",
    "Surface": "surface",
    "ToolCall": "surface",
    "ToolSpec": "surface",
    "UnknownPlugin": "plugins",
    "build_surface": "registry",
    "lookup": "plugins",
    "register": "plugins",
    "surface_class": "registry",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
