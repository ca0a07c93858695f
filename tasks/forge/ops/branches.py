"""Branches: list, get, create, delete, and branch protection."""

from __future__ import annotations

import copy

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, HOT, BranchRules


class BranchOps(ForgeBase):
    """The branches category."""

    @operation("branches", HOT, read_only=True)
    def branch_list(self, owner: str, repo: str) -> dict:
        """List the branches of a repository with their head commits.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        r = self._repo(owner, repo)
        return {"branches": [{"name": n, **b} for n, b in r["branches"].items()]}

    @operation("branches", COLD, read_only=True)
    def branch_get(self, owner: str, repo: str, branch: str) -> dict:
        """Get one branch: its head commit and whether it is protected.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            branch: Branch name.
        """
        r = self._repo(owner, repo)
        return {"name": self._branch(r, branch), **r["branches"][branch]}

    @operation("branches", COLD)
    def branch_create(self, owner: str, repo: str, new_branch_name: str, old_branch_name: str | None = None) -> dict:
        """Create a branch from an existing one (the default branch when not given).

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            new_branch_name: Name of the branch to create.
            old_branch_name: Branch to start from; omit for the default branch.
        """
        r = self._repo(owner, repo)
        source, commit = self._head(r, old_branch_name)
        if new_branch_name in r["branches"]:
            raise ToolError(f"branch {new_branch_name!r} already exists")
        r["branches"][new_branch_name] = {"commit": commit, "protected": False}
        r["files"][new_branch_name] = copy.deepcopy(r["files"].get(source, {}))
        return {"name": new_branch_name, "from": source}

    @operation("branches", COLD, destructive=True)
    def branch_delete(self, owner: str, repo: str, branch: str) -> dict:
        """Delete a branch (not the default branch, not a protected one).

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            branch: Branch to delete.
        """
        r = self._repo(owner, repo)
        self._branch(r, branch)
        if branch == r["default_branch"] or r["branches"][branch]["protected"]:
            raise ToolError(f"branch {branch!r} is the default or protected and cannot be deleted")
        self._drop_branch(r, branch)
        return {"deleted": branch}

    @operation("branches", COLD, read_only=True)
    def branch_protection_list(self, owner: str, repo: str) -> dict:
        """List the branch protection rules of a repository.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        return {"protections": list(self._repo(owner, repo)["protections"].values())}

    @operation("branches", COLD)
    def branch_protection_create(self, owner: str, repo: str, branch_name: str, rules: BranchRules) -> dict:
        """Protect a branch: required approvals, who may push, required status checks.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            branch_name: Branch to protect.
            rules: Protection rules (required_approvals, enable_push, block_on_rejected_reviews, status_check_contexts).
        """
        r = self._repo(owner, repo)
        self._branch(r, branch_name)
        r["protections"][branch_name] = {"branch": branch_name, **rules}
        r["branches"][branch_name]["protected"] = True
        return r["protections"][branch_name]
