"""File contents and commits: read files and trees, commit file changes, list commits and CI statuses."""

from __future__ import annotations

from typing import Literal, NamedTuple

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, HOT


class Tree(NamedTuple):
    """A branch and its files (path: content)."""

    branch: str
    files: dict[str, str]


class ContentOps(ForgeBase):
    """The contents and commits categories: a change to a file is a commit."""

    # == file contents ============================================================================
    def _tree(self, owner: str, repo: str, ref: str | None) -> Tree:
        """The files of a branch (the default one when ``ref`` is None)."""
        r = self._repo(owner, repo)
        branch = self._branch(r, ref)
        return Tree(branch, r["files"].get(branch, {}))

    @operation("contents", HOT, read_only=True)
    def file_get(self, owner: str, repo: str, filepath: str, ref: str | None = None) -> dict:
        """Read a file's content from a branch (the default branch when not given).

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            filepath: Path of the file in the repository, e.g. src/app.py.
            ref: Branch to read from; omit for the default branch.
        """
        branch, files = self._tree(owner, repo, ref)
        if filepath not in files:
            raise ToolError(f"file {filepath!r} not found on branch {branch!r}")
        return {"path": filepath, "ref": branch, "content": files[filepath]}

    @operation("contents", COLD, read_only=True)
    def tree_get(self, owner: str, repo: str, ref: str | None = None, path: str = "") -> dict:
        """List the files of a branch, optionally under one folder.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            ref: Branch; omit for the default branch.
            path: Folder to list (empty for the whole tree).
        """
        branch, files = self._tree(owner, repo, ref)
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        return {"ref": branch, "files": sorted(f for f in files if f.startswith(prefix))}

    @operation("contents", COLD)
    def file_create(
        self, owner: str, repo: str, filepath: str, content: str, message: str, branch: str | None = None
    ) -> dict:
        """Create a new file with a commit.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            filepath: Path of the new file.
            content: Full text of the file.
            message: Commit message.
            branch: Branch to commit to; omit for the default branch.
        """
        done = self._commit(owner, repo, filepath, branch, message, must_exist=False, hint="; use file_update")
        done.repo["files"].setdefault(done.branch, {})[filepath] = content
        return {"path": filepath, "branch": done.branch, "commit": done.sha}

    @operation("contents", COLD)
    def file_update(
        self, owner: str, repo: str, filepath: str, content: str, message: str, branch: str | None = None
    ) -> dict:
        """Replace the content of an existing file with a commit.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            filepath: Path of the file.
            content: New full text of the file.
            message: Commit message.
            branch: Branch to commit to; omit for the default branch.
        """
        done = self._commit(owner, repo, filepath, branch, message, must_exist=True, hint="; use file_create")
        done.repo["files"][done.branch][filepath] = content
        return {"path": filepath, "branch": done.branch, "commit": done.sha}

    @operation("contents", COLD, destructive=True)
    def file_delete(self, owner: str, repo: str, filepath: str, message: str, branch: str | None = None) -> dict:
        """Delete a file with a commit.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            filepath: Path of the file.
            message: Commit message.
            branch: Branch to commit to; omit for the default branch.
        """
        done = self._commit(owner, repo, filepath, branch, message, must_exist=True)
        del done.repo["files"][done.branch][filepath]
        return {"deleted": filepath, "branch": done.branch, "commit": done.sha}

    # == commits ==================================================================================
    @operation("commits", HOT, read_only=True)
    def commit_list(self, owner: str, repo: str, limit: int = 10, author: str | None = None) -> dict:
        """List recent commits of a repository, newest first.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            limit: Maximum number of commits.
            author: Only commits by this user.
        """
        commits = [c for c in self._repo(owner, repo)["commits"] if author in (None, c["author"])]
        return {"commits": commits[:limit]}

    @operation("commits", COLD, read_only=True)
    def commit_get(self, owner: str, repo: str, sha: str) -> dict:
        """Get one commit by its SHA (a 7-character prefix is enough).

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            sha: Commit SHA.
        """
        for c in self._repo(owner, repo)["commits"]:
            if c["sha"].startswith(sha):
                return c
        raise ToolError(f"commit {sha!r} not found")

    @operation("commits", COLD, read_only=True)
    def commit_status_list(self, owner: str, repo: str, ref: str) -> dict:
        """List the CI statuses reported for a commit.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            ref: Commit SHA.
        """
        return {"statuses": self._repo(owner, repo)["statuses"].get(ref, [])}

    @operation("commits", COLD)
    def commit_status_create(
        self,
        owner: str,
        repo: str,
        sha: str,
        state: Literal["pending", "success", "error", "failure"],
        context: str,
        description: str = "",
    ) -> dict:
        """Report a CI status on a commit.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            sha: Commit SHA.
            state: Status state.
            context: Name of the check, e.g. ci/build.
            description: Short human-readable text.
        """
        r = self._repo(owner, repo)
        status = {"context": context, "state": state, "description": description}
        r["statuses"].setdefault(sha, []).append(status)
        return status

    @operation("commits", COLD, read_only=True)
    def compare_commits(self, owner: str, repo: str, base: str, head: str) -> dict:
        """Compare two branches: how many commits head is ahead of base.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            base: Base branch.
            head: Head branch.
        """
        r = self._repo(owner, repo)
        self._branch(r, base)
        self._branch(r, head)
        same = r["branches"][base]["commit"] == r["branches"][head]["commit"]
        return {"base": base, "head": head, "ahead_by": 0 if same else 1, "identical": same}
