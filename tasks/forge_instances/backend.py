"""Two forges behind one catalog: every forge operation takes ``instance`` (``work``, the default, or ``oss``).

As in the dsh-gitea spike's multi-instance plugin, one set of operations serves several Gitea instances and each
call names the one it goes to. Each operation here is the forge suite's own (tasks/forge/ops/), with one more
keyword argument, ``instance``, documented like the others, so the catalog (``catalog: backend.py:...``) is the
forge's 96 operations, each with the same optional ``instance`` property: a pass-through parameter
(``Catalog.passthrough``) that every surface must carry. The forge suite's own catalog is unchanged.

The two instances are two :class:`ForgeBackend` stores: ``work`` starts from the forge suite's scenario, ``oss``
from :mod:`scenario` (other data under the same names). ``state()`` is ``{"work": ..., "oss": ...}``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, Literal

from surfbench.bench.contracts.backend import OP_ATTR, OperationBackend, ToolError, operation_methods
from surfbench.tasks.forge.backend import ForgeBackend
from surfbench.tasks.forge_instances.scenario import OSS_SCENARIOS

Instance = Literal["work", "oss"]
INSTANCES: tuple[str, ...] = typing.get_args(Instance)
DEFAULT_INSTANCE = "work"
INSTANCE_DOC = "Which forge the call goes to: work (the company's forge, the default) or oss (the public one)."


def with_instance(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The forge operation ``fn`` as an operation of both forges: its signature and docstring plus ``instance``."""
    name = fn.__name__

    def op(self: ForgeInstancesBackend, *, instance: str = DEFAULT_INSTANCE, **args: Any) -> Any:
        return self.on(instance).call(name, args)

    signature = inspect.signature(fn)
    extra = inspect.Parameter("instance", inspect.Parameter.KEYWORD_ONLY, default=DEFAULT_INSTANCE, annotation=Instance)
    op.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])  # type: ignore[attr-defined]
    op.__annotations__ = {**typing.get_type_hints(fn), "instance": Instance}
    doc = inspect.cleandoc(fn.__doc__ or name)
    op.__doc__ = f"{doc}\n\n{'' if 'Args:' in doc else 'Args:'}".rstrip() + f"\n    instance: {INSTANCE_DOC}"
    op.__name__, op.__qualname__ = name, f"ForgeInstancesBackend.{name}"
    setattr(op, OP_ATTR, dict(getattr(fn, OP_ATTR)))
    return op


class ForgeInstancesBackend(OperationBackend):
    """The work and oss forges; each operation runs on the one its ``instance`` names."""

    def __init__(self) -> None:
        self.instances = {name: ForgeBackend() for name in INSTANCES}
        super().__init__()

    def reset(self, scenario: str | None = None) -> None:
        """Both forges from their seeded state: work from the forge suite's scenario, oss from its own."""
        name = scenario or "default"
        if name not in OSS_SCENARIOS:
            raise ValueError(f"unknown forge_instances scenario {name!r}; known: {', '.join(OSS_SCENARIOS)}")
        self.instances["work"].reset(name)
        self.instances["oss"].db = OSS_SCENARIOS[name]()

    def state(self) -> dict[str, Any]:
        """Each forge's whole store, by instance."""
        return {name: forge.state() for name, forge in self.instances.items()}

    def on(self, instance: str) -> ForgeBackend:
        """The forge an ``instance`` names (validation already refused any other name; this is the backstop)."""
        forge = self.instances.get(instance)
        if forge is None:
            raise ToolError(f"unknown instance {instance!r}: use one of {', '.join(INSTANCES)}")
        return forge


for _fn in operation_methods(ForgeBackend):  # in the forge's catalog order
    setattr(ForgeInstancesBackend, _fn.__name__, with_instance(_fn))
