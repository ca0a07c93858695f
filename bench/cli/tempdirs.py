"""The private temporary folders of ``surfbench run``: no secret in them, removed once their owner is gone.

``surfbench run`` gives Hydra a private folder under the temporary directory (``surfbench-hydra-*``) for
its run and sweep folders, and its cells one for failure markers (``surfbench-failures-*``); a run
deletes both when it ends. A run killed with SIGKILL cannot, so:

- Hydra writes no secret there. The ``.hydra/`` records and the job logs are not written at all
  (``hydra.output_subdir: null``, ``hydra/job_logging: disabled`` in configs/config.yaml), and the one
  file a sweep writes regardless, ``multirun.yaml`` (the composed configuration and every override, an
  ``api_base`` password included), goes to ``/dev/null``: :func:`discard_sweep_record` puts a link
  there in its place before Hydra starts. Nothing reads that file (the folder is deleted at the end).
- Each folder's name records its owner, and every run first removes the folders whose owner is gone, those
  of an episode's sandbox and of the scaffold check too: one mechanism for every surfbench temporary folder
  (:mod:`surfbench.bench.base.owned`: :func:`owned_tempdir`, :func:`remove_stale`). A folder of a live
  process, of another host or pid namespace, of another user, or named by an older surfbench is left alone.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from surfbench.bench.base.owned import PREFIXES as PREFIXES
from surfbench.bench.base.owned import owned_tempdir as owned_tempdir
from surfbench.bench.base.owned import remove_stale as remove_stale


def discard_sweep_record(sweep_dir: Path) -> None:
    """Make Hydra's ``multirun.yaml`` in ``sweep_dir`` go to ``/dev/null`` (it holds every override verbatim)."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # no /dev/null: the folder is still private and deleted at the end
        os.symlink(os.devnull, sweep_dir / "multirun.yaml")
