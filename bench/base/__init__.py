"""The base stage: what every other stage stands on.

The base every stage stands on: paths, configuration files, secrets and their redaction, bounded reads,
argument validation, the error taxonomy, markdown helpers, report sections, concurrency limits (the sandbox
is ``bench/sandbox/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.base.config import (
        ConfigError as ConfigError,
    )
    from surfbench.bench.base.config import (
        find_config as find_config,
    )
    from surfbench.bench.base.config import (
        read_group_config as read_group_config,
    )
    from surfbench.bench.base.config import (
        shown as shown,
    )
    from surfbench.bench.base.config import (
        surface_config as surface_config,
    )
    from surfbench.bench.base.paths import cache_root as cache_root
    from surfbench.bench.base.secrets import redact as redact
    from surfbench.bench.base.secrets import register as register
    from surfbench.bench.base.taxonomy import ErrorType as ErrorType
    from surfbench.bench.base.validation import (
        ArgIssue as ArgIssue,
    )
    from surfbench.bench.base.validation import (
        describe_issues as describe_issues,
    )
    from surfbench.bench.base.validation import (
        validate_args as validate_args,
    )

EXPORTS = {
    "ArgIssue": "validation",
    "ConfigError": "config",
    "ErrorType": "taxonomy",
    "cache_root": "paths",
    "describe_issues": "validation",
    "find_config": "config",
    "read_group_config": "config",
    "redact": "secrets",
    "register": "secrets",
    "shown": "config",
    "surface_config": "config",
    "validate_args": "validation",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
