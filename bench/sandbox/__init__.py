"""The bubblewrap sandbox: a harness facility any suite or surface runs untrusted commands or code in.

``Sandbox`` (:mod:`.box`) runs one command in a fresh namespace over a scratch folder, with no network,
limits on processes, memory (:mod:`.memcap`), disk, CPU time, output and wall time (:mod:`.limits`).
``python -m surfbench.bench.sandbox`` prints which mechanisms apply on this machine.
"""

from surfbench.bench.sandbox.box import NOBODY, Sandbox, bwrap_path, describe
from surfbench.bench.sandbox.limits import DISK_QUOTA_EXCEEDED, MB, MEMORY_EXCEEDED, Limits, Result

__all__ = [
    "DISK_QUOTA_EXCEEDED",
    "MB",
    "MEMORY_EXCEEDED",
    "NOBODY",
    "Limits",
    "Result",
    "Sandbox",
    "bwrap_path",
    "describe",
]
