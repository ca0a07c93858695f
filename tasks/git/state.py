"""The git suite's state: what the episode's working copy holds after the server's calls (read with git)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from surfbench.tasks.git.fixture import git


def _lines(text: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line)


def git_state(workdir: Path | None) -> dict[str, Any]:
    """The working copy's repository as the checks read it ({} when there is none).

    HEAD (message, author, commit count, files it changed), the current branch (None: detached), every
    branch with its tip's message, and the staged, unstaged and untracked files.
    """
    if workdir is None or not (workdir / ".git").exists():
        return {}
    branch = git(workdir, "branch", "--show-current").strip()
    tips = git(workdir, "for-each-ref", "--format=%(refname:short)%09%(contents:subject)", "refs/heads")
    branch_tips = dict(line.split("\t", 1) for line in tips.splitlines() if "\t" in line)
    return {
        "branch": branch or None,  # None: a detached HEAD
        "branches": sorted(branch_tips),
        "branch_tips": branch_tips,
        "head": {
            "message": git(workdir, "log", "-1", "--format=%B").strip(),
            "author": git(workdir, "log", "-1", "--format=%an").strip(),
            "commits": int(git(workdir, "rev-list", "--count", "HEAD").strip()),
            "files": _lines(git(workdir, "show", "--format=", "--name-only", "HEAD")),
        },
        "staged": _lines(git(workdir, "diff", "--cached", "--name-only")),
        "unstaged": _lines(git(workdir, "diff", "--name-only")),
        "untracked": _lines(git(workdir, "ls-files", "--others", "--exclude-standard")),
    }
