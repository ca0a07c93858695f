"""Repositories: get, search, create (for you or an organization), edit, delete, fork, topics."""

from __future__ import annotations

import copy

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, HOT, set_given
from surfbench.tasks.forge.scenario import small_repo


class RepoOps(ForgeBase):
    """The repositories category."""

    @operation("repositories", HOT, read_only=True)
    def repo_get(self, owner: str, repo: str) -> dict:
        """Get a repository's details: description, visibility, default branch, stars and topics.

        Args:
            owner: Owner of the repository (user or organization).
            repo: Name of the repository.
        """
        r = self._repo(owner, repo)
        keys = ("description", "private", "archived", "default_branch", "website", "topics", "stars", "template")
        return {"full_name": f"{owner}/{repo}", **{k: r[k] for k in keys}, "forks": len(r["forks"])}

    @operation("repositories", HOT, read_only=True)
    def repo_search(self, q: str, private: bool | None = None, limit: int = 10) -> dict:
        """Search repositories by a keyword in their name or description.

        Args:
            q: Keyword to look for.
            private: Only private (true) or only public (false) repositories; omit for both.
            limit: Maximum number of results.
        """
        hits = [
            name
            for name, r in self.db["repos"].items()
            if (q.lower() in name.lower() or q.lower() in r["description"].lower())
            and (private is None or r["private"] == private)
        ]
        return {"repositories": hits[:limit]}

    @operation("repositories", COLD)
    def repo_create(
        self, name: str, description: str = "", private: bool = False, default_branch: str = "main"
    ) -> dict:
        """Create a repository owned by the signed-in user.

        Args:
            name: Name of the new repository.
            description: Short description.
            private: Whether only collaborators can see it.
            default_branch: Name of the default branch.
        """
        return self._create_repo(self.db["me"], name, description, private, default_branch)

    @operation("repositories", COLD)
    def org_repo_create(
        self, org: str, name: str, description: str = "", private: bool = False, default_branch: str = "main"
    ) -> dict:
        """Create a repository owned by an organization.

        Args:
            org: Organization that will own the repository.
            name: Name of the new repository.
            description: Short description.
            private: Whether only members can see it.
            default_branch: Name of the default branch.
        """
        self._org(org)
        return self._create_repo(org, name, description, private, default_branch)

    def _create_repo(self, owner: str, name: str, description: str, private: bool, branch: str) -> dict:
        key = f"{owner}/{name}"
        if key in self.db["repos"]:
            raise ToolError(f"repository {key} already exists")
        r = small_repo(owner, name, description, private)
        if branch != "main":
            r["branches"] = {branch: r["branches"].pop("main")}
            r["files"] = {branch: r["files"].pop("main")}
            r["default_branch"] = branch
        self.db["repos"][key] = r
        return {"full_name": key, "private": private, "default_branch": branch}

    @operation("repositories", COLD)
    def repo_edit(
        self,
        owner: str,
        repo: str,
        description: str | None = None,
        website: str | None = None,
        private: bool | None = None,
        archived: bool | None = None,
        default_branch: str | None = None,
        has_wiki: bool | None = None,
    ) -> dict:
        """Change a repository's settings; only the fields you pass change.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            description: New description.
            website: New website URL.
            private: Make the repository private (true) or public (false).
            archived: Archive (true) or unarchive (false) the repository.
            default_branch: New default branch (must exist).
            has_wiki: Enable or disable the wiki.
        """
        r = self._repo(owner, repo)
        if default_branch is not None:
            self._branch(r, default_branch)
        updated = set_given(
            r, description=description, website=website, private=private, archived=archived,
            default_branch=default_branch, has_wiki=has_wiki,
        )  # fmt: skip
        return {"full_name": f"{owner}/{repo}", "updated": updated}

    @operation("repositories", COLD, destructive=True)
    def repo_delete(self, owner: str, repo: str) -> dict:
        """Delete a repository permanently.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        self._repo(owner, repo)
        del self.db["repos"][f"{owner}/{repo}"]
        return {"deleted": f"{owner}/{repo}"}

    @operation("repositories", COLD)
    def repo_fork(self, owner: str, repo: str, organization: str | None = None) -> dict:
        """Fork a repository into your account or into an organization.

        Args:
            owner: Owner of the repository to fork.
            repo: Name of the repository to fork.
            organization: Organization to fork into; omit to fork into your own account.
        """
        src = self._repo(owner, repo)
        target = organization or self.db["me"]
        if organization:
            self._org(organization)
        key = f"{target}/{repo}"
        if key in self.db["repos"]:
            raise ToolError(f"{key} already exists")
        fork = copy.deepcopy(src)
        fork.update({"owner": target, "issues": {}, "forks": [], "stars": 0, "hooks": {}, "collaborators": {}})
        self.db["repos"][key] = fork
        src["forks"].append(key)
        return {"full_name": key, "forked_from": f"{owner}/{repo}"}

    @operation("repositories", COLD, read_only=True)
    def repo_topics_list(self, owner: str, repo: str) -> dict:
        """List a repository's topics.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        return {"topics": list(self._repo(owner, repo)["topics"])}

    @operation("repositories", COLD)
    def repo_topics_replace(self, owner: str, repo: str, topics: list[str]) -> dict:
        """Replace all topics of a repository with the given list.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            topics: The complete new list of topics (lower-case words).
        """
        r = self._repo(owner, repo)
        r["topics"] = [t.lower() for t in topics]
        return {"topics": r["topics"]}
