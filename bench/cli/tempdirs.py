"""The private temporary folders of ``surfbench run``: no secret in them, removed once their owner is gone.

``surfbench run`` gives Hydra a private folder under the temporary directory (``surfbench-hydra-*``) for
its run and sweep folders, and its cells one for failure markers (``surfbench-failures-*``); a run
deletes both when it ends. A run killed with SIGKILL cannot, so:

- Hydra writes no secret there. The ``.hydra/`` records and the job logs are not written at all
  (``hydra.output_subdir: null``, ``hydra/job_logging: disabled`` in configs/config.yaml), and the one
  file a sweep writes regardless, ``multirun.yaml`` (the composed configuration and every override, an
  ``api_base`` password included), goes to ``/dev/null``: :func:`discard_sweep_record` puts a link
  there in its place before Hydra starts. Nothing reads that file (the folder is deleted at the end).
- Each folder's name records its owner: a tag of the host and pid namespace, the pid and the
  process's start time, in the name so that no kill can leave a folder without them. Every run first
  removes the folders whose owner is gone (:func:`remove_stale`): the pid is not alive, is a zombie,
  or is a process that started at another time (the pid was reused), the rule of the episode claims
  (:mod:`surfbench.bench.store.claims`). A folder of a live run, of another host or pid namespace, of another
  user, or named by an older surfbench (no owner in its name) is left alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from surfbench.bench.store.claims import HOST, PIDNS, Owner, _proc_stat

PREFIXES = ("surfbench-hydra-", "surfbench-failures-")
"""The temporary folders a run makes (bench/cli/session.py), each named ``PREFIX<tag>-<pid>-<start>-<random>``."""
_OWNED = re.compile(r"^surfbench-(?:hydra|failures)-([0-9a-f]{8})-([0-9]+)-([0-9]+)-[^-]+$")
_TAG = hashlib.sha256(f"{HOST}\0{PIDNS}".encode()).hexdigest()[:8]


def owned_tempdir(prefix: str, root: Path | None = None) -> Path:
    """A new private (0700) folder in ``root`` (the temporary directory), its owner (this process) in its name."""
    stat = _proc_stat(os.getpid())
    start = stat[1] if stat else 0  # 0: no /proc, only the pid is checked
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{_TAG}-{os.getpid()}-{start}-", dir=root))


def discard_sweep_record(sweep_dir: Path) -> None:
    """Make Hydra's ``multirun.yaml`` in ``sweep_dir`` go to ``/dev/null`` (it holds every override verbatim)."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # no /dev/null: the folder is still private and deleted at the end
        os.symlink(os.devnull, sweep_dir / "multirun.yaml")


def remove_stale(root: Path | None = None) -> list[Path]:
    """Remove the folders of :data:`PREFIXES` in ``root`` (the temporary directory) whose owner is gone.

    Returns the folders removed. Never fails a run: a folder that cannot be read or removed stays.
    """
    try:
        entries = list(os.scandir(root or tempfile.gettempdir()))
    except OSError:
        return []
    removed = []
    for entry in entries:
        match = _OWNED.match(entry.name)
        if match is None or match.group(1) != _TAG:
            continue  # not ours to judge: another host or pid namespace, or an older surfbench's name
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        pid, start = int(match.group(2)), int(match.group(3))
        if pid == os.getpid() or Owner(HOST, PIDNS, pid, start or None, "", "").alive():
            continue  # this process's own folders are its to delete
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed
