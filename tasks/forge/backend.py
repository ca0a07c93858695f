"""The forge backend: a Gitea-like forge in memory, 96 operations over a seeded scenario.

Each ``@operation`` method is one catalog operation: its signature and docstring are the schema the
surfaces show (imported by surfbench's python-callables importer), so the catalog and the backend
cannot drift. Operation and parameter names follow Gitea's API (owner/repo/index ...); the
descriptions are ours. Traffic weights: the 15 hottest operations carry 70% of the weight (the dsh
seed's measurement); the other 81 share the remaining 30%.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Literal, TypedDict

from surfbench.bench.backend import OperationBackend, ToolError, operation
from surfbench.tasks.forge.scenario import SCENARIOS

HOT = 70.0 / 15  # weight of each of the 15 hot operations
COLD = 30.0 / 81  # weight of each of the other 81

IssueState = Literal["open", "closed", "all"]
MergeStyle = Literal["merge", "rebase", "squash", "fast-forward-only"]
ReviewEvent = Literal["APPROVED", "REQUEST_CHANGES", "COMMENT"]
HookEvent = Literal["push", "pull_request", "issues", "issue_comment", "release", "create", "delete"]
Permission = Literal["read", "write", "admin"]


class BranchRules(TypedDict, total=False):
    """Protection rules for a branch."""

    required_approvals: int
    enable_push: bool
    block_on_rejected_reviews: bool
    status_check_contexts: list[str]


def _sha(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:7]


def _issue_view(issue: dict[str, Any]) -> dict[str, Any]:
    keys = ("number", "title", "state", "author", "labels", "assignees", "milestone", "deadline", "locked")
    view = {k: issue[k] for k in keys}
    view["comments"] = len(issue["comments"])
    if issue["is_pull"]:
        view.update({k: issue[k] for k in ("head", "base", "merged")})
    return view


class ForgeBackend(OperationBackend):
    """In-memory forge. ``state()`` is the whole store (final-state checks read it)."""

    def __init__(self) -> None:
        super().__init__()
        self.db: dict[str, Any] = {}

    def reset(self, scenario: str | None = None) -> None:
        name = scenario or "default"
        if name not in SCENARIOS:
            raise ValueError(f"unknown forge scenario {name!r}; known: {', '.join(SCENARIOS)}")
        self.db = SCENARIOS[name]()

    def state(self) -> dict[str, Any]:
        return copy.deepcopy(self.db)

    # -- lookups ----------------------------------------------------------------------------------
    def _repo(self, owner: str, repo: str) -> dict[str, Any]:
        found = self.db["repos"].get(f"{owner}/{repo}")
        if found is None:
            if "/" in owner or "/" in repo:
                raise ToolError(
                    f"repository {owner}/{repo} not found: pass the owner and the name separately, "
                    "e.g. owner='acme', repo='web' for acme/web"
                )
            raise ToolError(f"repository {owner}/{repo} not found")
        return found

    def _issue(self, owner: str, repo: str, index: int, pull: bool | None = None) -> dict[str, Any]:
        r = self._repo(owner, repo)
        issue = r["issues"].get(str(index))
        if issue is None or (pull is not None and issue["is_pull"] != pull):
            kind = "pull request" if pull else "issue"
            raise ToolError(f"{kind} #{index} not found in {owner}/{repo}")
        return issue

    def _user(self, username: str) -> dict[str, Any]:
        user = self.db["users"].get(username)
        if user is None:
            raise ToolError(f"user {username!r} not found")
        return user

    def _org(self, org: str) -> dict[str, Any]:
        found = self.db["orgs"].get(org)
        if found is None:
            raise ToolError(f"organization {org!r} not found")
        return found

    def _label_names(self, r: dict[str, Any], labels: list[str]) -> list[str]:
        missing = [name for name in labels if name not in r["labels"]]
        if missing:
            raise ToolError(f"label(s) {', '.join(missing)} do not exist in {r['owner']}/{r['name']}")
        return labels

    def _branch(self, r: dict[str, Any], branch: str | None) -> str:
        name = branch or r["default_branch"]
        if name not in r["branches"]:
            raise ToolError(f"branch {name!r} not found in {r['owner']}/{r['name']}")
        return name

    # == repositories =============================================================================
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
        from surfbench.tasks.forge.scenario import small_repo

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
        changes = {
            "description": description, "website": website, "private": private, "archived": archived,
            "default_branch": default_branch, "has_wiki": has_wiki,
        }  # fmt: skip
        for key, value in changes.items():
            if value is not None:
                r[key] = value
        return {"full_name": f"{owner}/{repo}", "updated": [k for k, v in changes.items() if v is not None]}

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

    # == branches =================================================================================
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
        source = self._branch(r, old_branch_name)
        if new_branch_name in r["branches"]:
            raise ToolError(f"branch {new_branch_name!r} already exists")
        r["branches"][new_branch_name] = {"commit": r["branches"][source]["commit"], "protected": False}
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
        del r["branches"][branch]
        r["files"].pop(branch, None)
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

    # == file contents ============================================================================
    @operation("contents", HOT, read_only=True)
    def file_get(self, owner: str, repo: str, filepath: str, ref: str | None = None) -> dict:
        """Read a file's content from a branch (the default branch when not given).

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            filepath: Path of the file in the repository, e.g. src/app.py.
            ref: Branch to read from; omit for the default branch.
        """
        r = self._repo(owner, repo)
        branch = self._branch(r, ref)
        files = r["files"].get(branch, {})
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
        r = self._repo(owner, repo)
        branch = self._branch(r, ref)
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        return {"ref": branch, "files": sorted(f for f in r["files"].get(branch, {}) if f.startswith(prefix))}

    def _write(self, owner: str, repo: str, filepath: str, branch: str | None, message: str, author: str) -> tuple:
        r = self._repo(owner, repo)
        name = self._branch(r, branch)
        sha = _sha(owner, repo, filepath, message, str(len(r["commits"])))
        r["commits"].insert(0, {"sha": sha, "message": message, "author": author, "date": "2026-11-30T12:00:00Z"})
        r["branches"][name]["commit"] = sha
        return r, name, sha

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
        r = self._repo(owner, repo)
        name = self._branch(r, branch)
        if filepath in r["files"].get(name, {}):
            raise ToolError(f"{filepath!r} already exists on {name!r}; use file_update")
        r, name, sha = self._write(owner, repo, filepath, branch, message, self.db["me"])
        r["files"].setdefault(name, {})[filepath] = content
        return {"path": filepath, "branch": name, "commit": sha}

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
        r = self._repo(owner, repo)
        name = self._branch(r, branch)
        if filepath not in r["files"].get(name, {}):
            raise ToolError(f"{filepath!r} does not exist on {name!r}; use file_create")
        r, name, sha = self._write(owner, repo, filepath, branch, message, self.db["me"])
        r["files"][name][filepath] = content
        return {"path": filepath, "branch": name, "commit": sha}

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
        r = self._repo(owner, repo)
        name = self._branch(r, branch)
        if filepath not in r["files"].get(name, {}):
            raise ToolError(f"{filepath!r} does not exist on {name!r}")
        r, name, sha = self._write(owner, repo, filepath, branch, message, self.db["me"])
        del r["files"][name][filepath]
        return {"deleted": filepath, "branch": name, "commit": sha}

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

    # == issues ===================================================================================
    @operation("issues", HOT, read_only=True)
    def issue_list(
        self,
        owner: str,
        repo: str,
        state: IssueState = "open",
        labels: list[str] | None = None,
        assignee: str | None = None,
        milestone: str | None = None,
        limit: int = 20,
    ) -> dict:
        """List a repository's issues, filtered by state, labels, assignee or milestone.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            state: Which issues to list.
            labels: Only issues that have all of these labels.
            assignee: Only issues assigned to this user.
            milestone: Only issues in this milestone (its title).
            limit: Maximum number of issues.
        """
        out = []
        for issue in self._repo(owner, repo)["issues"].values():
            if issue["is_pull"] or (state != "all" and issue["state"] != state):
                continue
            if labels and not set(labels) <= set(issue["labels"]):
                continue
            if assignee and assignee not in issue["assignees"]:
                continue
            if milestone and issue["milestone"] != milestone:
                continue
            out.append({k: issue[k] for k in ("number", "title", "state", "labels", "assignees")})
        return {"issues": out[:limit]}

    @operation("issues", COLD, read_only=True)
    def issue_search(self, q: str, state: IssueState = "open", limit: int = 20) -> dict:
        """Search issues across all repositories by a keyword in title or body.

        Args:
            q: Keyword to look for.
            state: Which issues to search.
            limit: Maximum number of results.
        """
        hits = []
        for name, r in self.db["repos"].items():
            for issue in r["issues"].values():
                text = f"{issue['title']} {issue['body']}".lower()
                if issue["is_pull"] or q.lower() not in text or (state != "all" and issue["state"] != state):
                    continue
                hits.append({"repo": name, "number": issue["number"], "title": issue["title"]})
        return {"issues": hits[:limit]}

    @operation("issues", HOT, read_only=True)
    def issue_get(self, owner: str, repo: str, index: int) -> dict:
        """Get one issue: title, body, state, labels, assignees, milestone.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
        """
        issue = self._issue(owner, repo, index)
        return {**_issue_view(issue), "body": issue["body"]}

    @operation("issues", HOT)
    def issue_create(
        self,
        owner: str,
        repo: str,
        title: str,
        body: str = "",
        labels: list[str] | None = None,
        assignees: list[str] | None = None,
        milestone: str | None = None,
    ) -> dict:
        """Open a new issue.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            title: Issue title.
            body: Issue description (Markdown).
            labels: Label names to put on the issue (they must exist).
            assignees: Users to assign.
            milestone: Milestone title to put the issue in.
        """
        r = self._repo(owner, repo)
        labels = self._label_names(r, labels or [])
        for user in assignees or []:
            self._user(user)
        if milestone and milestone not in r["milestones"]:
            raise ToolError(f"milestone {milestone!r} not found")
        number = r["next_number"]
        r["next_number"] += 1
        issue = {
            "number": number, "title": title, "body": body, "author": self.db["me"], "state": "open",
            "labels": labels, "assignees": list(assignees or []), "milestone": milestone, "deadline": None,
            "locked": False, "comments": [], "subscribers": [self.db["me"]], "times": [], "is_pull": False,
        }  # fmt: skip
        r["issues"][str(number)] = issue
        return _issue_view(issue)

    @operation("issues", HOT)
    def issue_edit(
        self,
        owner: str,
        repo: str,
        index: int,
        title: str | None = None,
        body: str | None = None,
        state: Literal["open", "closed"] | None = None,
        assignees: list[str] | None = None,
        milestone: str | None = None,
    ) -> dict:
        """Edit an issue: title, body, state (close or reopen), assignees or milestone.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
            title: New title.
            body: New description.
            state: "closed" to close the issue, "open" to reopen it.
            assignees: The complete new list of assignees.
            milestone: Milestone title to move the issue to.
        """
        r = self._repo(owner, repo)
        issue = self._issue(owner, repo, index)
        if milestone is not None and milestone not in r["milestones"]:
            raise ToolError(f"milestone {milestone!r} not found")
        for user in assignees or []:
            self._user(user)
        for key, value in (("title", title), ("body", body), ("state", state), ("milestone", milestone)):
            if value is not None:
                issue[key] = value
        if assignees is not None:
            issue["assignees"] = list(assignees)
        return _issue_view(issue)

    @operation("issues", COLD)
    def issue_set_deadline(self, owner: str, repo: str, index: int, due_date: str) -> dict:
        """Set an issue's due date.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
            due_date: Due date as YYYY-MM-DD.
        """
        issue = self._issue(owner, repo, index)
        issue["deadline"] = due_date
        return {"number": index, "deadline": due_date}

    @operation("issues", HOT)
    def issue_add_labels(self, owner: str, repo: str, index: int, labels: list[str]) -> dict:
        """Add labels to an issue, keeping the ones it has.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
            labels: Label names to add (they must exist).
        """
        r = self._repo(owner, repo)
        issue = self._issue(owner, repo, index)
        for name in self._label_names(r, labels):
            if name not in issue["labels"]:
                issue["labels"].append(name)
        return {"number": index, "labels": issue["labels"]}

    @operation("issues", COLD)
    def issue_remove_label(self, owner: str, repo: str, index: int, label: str) -> dict:
        """Remove one label from an issue.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
            label: Label name to remove.
        """
        issue = self._issue(owner, repo, index)
        if label not in issue["labels"]:
            raise ToolError(f"issue #{index} has no label {label!r}")
        issue["labels"].remove(label)
        return {"number": index, "labels": issue["labels"]}

    @operation("issues", COLD)
    def issue_replace_labels(self, owner: str, repo: str, index: int, labels: list[str]) -> dict:
        """Replace all labels of an issue with the given list.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
            labels: The complete new list of label names.
        """
        r = self._repo(owner, repo)
        issue = self._issue(owner, repo, index)
        issue["labels"] = list(self._label_names(r, labels))
        return {"number": index, "labels": issue["labels"]}

    @operation("issues", COLD, destructive=True)
    def issue_clear_labels(self, owner: str, repo: str, index: int) -> dict:
        """Remove every label from an issue.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
        """
        issue = self._issue(owner, repo, index)
        issue["labels"] = []
        return {"number": index, "labels": []}

    @operation("issues", COLD)
    def issue_lock(
        self, owner: str, repo: str, index: int, reason: Literal["off-topic", "too heated", "resolved", "spam"]
    ) -> dict:
        """Lock an issue's conversation so only collaborators can comment.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
            reason: Why the conversation is locked.
        """
        issue = self._issue(owner, repo, index)
        issue["locked"] = True
        issue["lock_reason"] = reason
        return {"number": index, "locked": True, "reason": reason}

    @operation("issues", COLD)
    def issue_subscribe(self, owner: str, repo: str, index: int, user: str) -> dict:
        """Subscribe a user to an issue's notifications.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
            user: User to subscribe.
        """
        issue = self._issue(owner, repo, index)
        self._user(user)
        if user not in issue["subscribers"]:
            issue["subscribers"].append(user)
        return {"number": index, "subscribers": issue["subscribers"]}

    @operation("issues", COLD, read_only=True)
    def issue_list_subscribers(self, owner: str, repo: str, index: int) -> dict:
        """List the users subscribed to an issue.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
        """
        return {"subscribers": list(self._issue(owner, repo, index)["subscribers"])}

    @operation("issues", COLD)
    def issue_add_time(self, owner: str, repo: str, index: int, time: int, created: str | None = None) -> dict:
        """Log time spent on an issue.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue number.
            time: Time spent, in seconds.
            created: Date the work was done (YYYY-MM-DD); omit for today.
        """
        if time <= 0:
            raise ToolError("time must be a positive number of seconds")
        issue = self._issue(owner, repo, index)
        issue["times"].append({"user": self.db["me"], "seconds": time, "created": created})
        return {"number": index, "total_seconds": sum(t["seconds"] for t in issue["times"])}

    # == issue comments ===========================================================================
    @operation("comments", HOT, read_only=True)
    def issue_comment_list(self, owner: str, repo: str, index: int) -> dict:
        """List the comments on an issue or pull request, oldest first.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue or pull request number.
        """
        return {"comments": list(self._issue(owner, repo, index)["comments"])}

    @operation("comments", HOT)
    def issue_comment_create(self, owner: str, repo: str, index: int, body: str) -> dict:
        """Add a comment to an issue or pull request.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Issue or pull request number.
            body: Comment text (Markdown).
        """
        r = self._repo(owner, repo)
        issue = self._issue(owner, repo, index)
        if issue["locked"]:
            raise ToolError(f"issue #{index} is locked")
        comment = {"id": r["next_comment"], "author": self.db["me"], "body": body, "created": "2026-11-30T12:00:00Z"}
        r["next_comment"] += 1
        issue["comments"].append(comment)
        return comment

    def _comment(self, owner: str, repo: str, comment_id: int) -> tuple[dict, dict]:
        for issue in self._repo(owner, repo)["issues"].values():
            for c in issue["comments"]:
                if c["id"] == comment_id:
                    return issue, c
        raise ToolError(f"comment {comment_id} not found in {owner}/{repo}")

    @operation("comments", COLD, read_only=True)
    def issue_comment_get(self, owner: str, repo: str, id: int) -> dict:
        """Get one comment by its id.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            id: Comment id.
        """
        issue, comment = self._comment(owner, repo, id)
        return {**comment, "issue": issue["number"]}

    @operation("comments", COLD)
    def issue_comment_edit(self, owner: str, repo: str, id: int, body: str) -> dict:
        """Change the text of a comment.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            id: Comment id.
            body: New comment text.
        """
        _, comment = self._comment(owner, repo, id)
        comment["body"] = body
        return comment

    @operation("comments", COLD, destructive=True)
    def issue_comment_delete(self, owner: str, repo: str, id: int) -> dict:
        """Delete a comment.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            id: Comment id.
        """
        issue, comment = self._comment(owner, repo, id)
        issue["comments"].remove(comment)
        return {"deleted": id}

    @operation("comments", COLD, read_only=True)
    def repo_comment_list(self, owner: str, repo: str, since: str | None = None) -> dict:
        """List all comments in a repository, across issues and pull requests.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            since: Only comments created after this date (YYYY-MM-DD).
        """
        out = []
        for issue in self._repo(owner, repo)["issues"].values():
            out += [{**c, "issue": issue["number"]} for c in issue["comments"] if not since or c["created"] >= since]
        return {"comments": out}

    # == labels ===================================================================================
    @operation("labels", COLD, read_only=True)
    def label_list(self, owner: str, repo: str) -> dict:
        """List the labels defined in a repository.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        return {"labels": list(self._repo(owner, repo)["labels"].values())}

    @operation("labels", COLD, read_only=True)
    def label_get(self, owner: str, repo: str, name: str) -> dict:
        """Get one label by name.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            name: Label name.
        """
        label = self._repo(owner, repo)["labels"].get(name)
        if label is None:
            raise ToolError(f"label {name!r} not found")
        return label

    @operation("labels", COLD)
    def label_create(self, owner: str, repo: str, name: str, color: str, description: str = "") -> dict:
        """Create a label in a repository.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            name: Label name.
            color: Color as a hex code like #00aabb.
            description: What the label means.
        """
        r = self._repo(owner, repo)
        if name in r["labels"]:
            raise ToolError(f"label {name!r} already exists")
        if not (color.startswith("#") and len(color) == 7):
            raise ToolError("color must look like #rrggbb")
        r["labels"][name] = {"name": name, "color": color.lower(), "description": description}
        return r["labels"][name]

    @operation("labels", COLD)
    def label_edit(
        self, owner: str, repo: str, name: str, new_name: str | None = None, color: str | None = None,
        description: str | None = None,
    ) -> dict:  # fmt: skip
        """Rename a label or change its color or description.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            name: Current label name.
            new_name: New name.
            color: New color (#rrggbb).
            description: New description.
        """
        r = self._repo(owner, repo)
        label = r["labels"].get(name)
        if label is None:
            raise ToolError(f"label {name!r} not found")
        if color is not None:
            label["color"] = color.lower()
        if description is not None:
            label["description"] = description
        if new_name and new_name != name:
            r["labels"][new_name] = r["labels"].pop(name)
            label["name"] = new_name
            for issue in r["issues"].values():
                issue["labels"] = [new_name if n == name else n for n in issue["labels"]]
        return label

    @operation("labels", COLD, destructive=True)
    def label_delete(self, owner: str, repo: str, name: str) -> dict:
        """Delete a label and remove it from every issue.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            name: Label name.
        """
        r = self._repo(owner, repo)
        if name not in r["labels"]:
            raise ToolError(f"label {name!r} not found")
        del r["labels"][name]
        for issue in r["issues"].values():
            issue["labels"] = [n for n in issue["labels"] if n != name]
        return {"deleted": name}

    # == milestones ===============================================================================
    @operation("milestones", COLD, read_only=True)
    def milestone_list(self, owner: str, repo: str, state: IssueState = "open") -> dict:
        """List a repository's milestones.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            state: Which milestones to list.
        """
        ms = self._repo(owner, repo)["milestones"].values()
        return {"milestones": [m for m in ms if state == "all" or m["state"] == state]}

    @operation("milestones", COLD, read_only=True)
    def milestone_get(self, owner: str, repo: str, title: str) -> dict:
        """Get one milestone with its open and closed issue counts.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            title: Milestone title.
        """
        r = self._repo(owner, repo)
        m = r["milestones"].get(title)
        if m is None:
            raise ToolError(f"milestone {title!r} not found")
        inside = [i for i in r["issues"].values() if i["milestone"] == title]
        return {**m, "open_issues": sum(i["state"] == "open" for i in inside),
                "closed_issues": sum(i["state"] == "closed" for i in inside)}  # fmt: skip

    @operation("milestones", COLD)
    def milestone_create(
        self, owner: str, repo: str, title: str, due_on: str | None = None, description: str = ""
    ) -> dict:
        """Create a milestone.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            title: Milestone title, e.g. v1.1.
            due_on: Due date as YYYY-MM-DD.
            description: What the milestone is about.
        """
        r = self._repo(owner, repo)
        if title in r["milestones"]:
            raise ToolError(f"milestone {title!r} already exists")
        r["milestones"][title] = {"title": title, "state": "open", "due_on": due_on, "description": description}
        return r["milestones"][title]

    @operation("milestones", COLD)
    def milestone_edit(
        self, owner: str, repo: str, title: str, state: Literal["open", "closed"] | None = None,
        due_on: str | None = None, description: str | None = None,
    ) -> dict:  # fmt: skip
        """Close or reopen a milestone, or change its due date or description.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            title: Milestone title.
            state: "closed" or "open".
            due_on: New due date (YYYY-MM-DD).
            description: New description.
        """
        m = self._repo(owner, repo)["milestones"].get(title)
        if m is None:
            raise ToolError(f"milestone {title!r} not found")
        for key, value in (("state", state), ("due_on", due_on), ("description", description)):
            if value is not None:
                m[key] = value
        return m

    @operation("milestones", COLD, destructive=True)
    def milestone_delete(self, owner: str, repo: str, title: str) -> dict:
        """Delete a milestone; its issues stay, without a milestone.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            title: Milestone title.
        """
        r = self._repo(owner, repo)
        if title not in r["milestones"]:
            raise ToolError(f"milestone {title!r} not found")
        del r["milestones"][title]
        for issue in r["issues"].values():
            if issue["milestone"] == title:
                issue["milestone"] = None
        return {"deleted": title}

    # == pull requests ============================================================================
    @operation("pulls", HOT, read_only=True)
    def pull_list(self, owner: str, repo: str, state: IssueState = "open") -> dict:
        """List a repository's pull requests.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            state: Which pull requests to list.
        """
        pulls = [i for i in self._repo(owner, repo)["issues"].values() if i["is_pull"]]
        keys = ("number", "title", "state", "head", "base", "author", "merged")
        return {"pulls": [{k: p[k] for k in keys} for p in pulls if state == "all" or p["state"] == state]}

    @operation("pulls", HOT, read_only=True)
    def pull_get(self, owner: str, repo: str, index: int) -> dict:
        """Get one pull request: branches, state, whether it is merged, changed files.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
        """
        pull = self._issue(owner, repo, index, pull=True)
        return {**_issue_view(pull), "body": pull["body"], "files": pull["files"]}

    @operation("pulls", HOT)
    def pull_create(
        self,
        owner: str,
        repo: str,
        head: str,
        base: str,
        title: str,
        body: str = "",
        assignees: list[str] | None = None,
    ) -> dict:
        """Open a pull request from a head branch into a base branch.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            head: Branch with the changes.
            base: Branch to merge into.
            title: Pull request title.
            body: Description (Markdown).
            assignees: Users to assign.
        """
        r = self._repo(owner, repo)
        self._branch(r, head)
        self._branch(r, base)
        if head == base:
            raise ToolError("head and base must differ")
        number = r["next_number"]
        r["next_number"] += 1
        pull = {
            "number": number, "title": title, "body": body, "author": self.db["me"], "state": "open", "labels": [],
            "assignees": list(assignees or []), "milestone": None, "deadline": None, "locked": False, "comments": [],
            "subscribers": [self.db["me"]], "times": [], "is_pull": True, "head": head, "base": base,
            "merged": False, "merge_style": None, "files": [], "reviews": [], "requested_reviewers": [],
        }  # fmt: skip
        r["issues"][str(number)] = pull
        return _issue_view(pull)

    @operation("pulls", COLD)
    def pull_edit(
        self, owner: str, repo: str, index: int, title: str | None = None, body: str | None = None,
        state: Literal["open", "closed"] | None = None, base: str | None = None,
    ) -> dict:  # fmt: skip
        """Edit a pull request: title, body, base branch, or close/reopen it.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
            title: New title.
            body: New description.
            state: "closed" to close without merging, "open" to reopen.
            base: New base branch.
        """
        r = self._repo(owner, repo)
        pull = self._issue(owner, repo, index, pull=True)
        if base is not None:
            self._branch(r, base)
        for key, value in (("title", title), ("body", body), ("state", state), ("base", base)):
            if value is not None:
                pull[key] = value
        return _issue_view(pull)

    @operation("pulls", COLD)
    def pull_merge(
        self, owner: str, repo: str, index: int, do: MergeStyle, delete_branch_after_merge: bool = False,
        merge_message: str | None = None,
    ) -> dict:  # fmt: skip
        """Merge a pull request with the given merge style.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
            do: Merge style.
            delete_branch_after_merge: Delete the head branch once merged.
            merge_message: Message of the merge commit.
        """
        r = self._repo(owner, repo)
        pull = self._issue(owner, repo, index, pull=True)
        if pull["merged"] or pull["state"] != "open":
            raise ToolError(f"pull request #{index} is not open")
        pull.update({"merged": True, "state": "closed", "merge_style": do})
        r["branches"][pull["base"]]["commit"] = _sha(owner, repo, "merge", str(index))
        if delete_branch_after_merge and pull["head"] in r["branches"]:
            del r["branches"][pull["head"]]
            r["files"].pop(pull["head"], None)
        return {"merged": True, "style": do}

    @operation("pulls", COLD, read_only=True)
    def pull_is_merged(self, owner: str, repo: str, index: int) -> dict:
        """Check whether a pull request has been merged.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
        """
        return {"merged": self._issue(owner, repo, index, pull=True)["merged"]}

    @operation("pulls", COLD, read_only=True)
    def pull_files(self, owner: str, repo: str, index: int) -> dict:
        """List the files a pull request changes.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
        """
        return {"files": list(self._issue(owner, repo, index, pull=True)["files"])}

    # == reviews ==================================================================================
    @operation("reviews", COLD, read_only=True)
    def review_list(self, owner: str, repo: str, index: int) -> dict:
        """List the reviews of a pull request.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
        """
        return {"reviews": list(self._issue(owner, repo, index, pull=True)["reviews"])}

    @operation("reviews", COLD)
    def review_create(self, owner: str, repo: str, index: int, event: ReviewEvent, body: str = "") -> dict:
        """Review a pull request: approve it, request changes, or just comment.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
            event: The verdict.
            body: Review text.
        """
        r = self._repo(owner, repo)
        pull = self._issue(owner, repo, index, pull=True)
        review = {"id": r["next_review"], "reviewer": self.db["me"], "state": event, "body": body}
        r["next_review"] += 1
        pull["reviews"].append(review)
        return review

    @operation("reviews", COLD)
    def review_request(self, owner: str, repo: str, index: int, reviewers: list[str]) -> dict:
        """Ask users to review a pull request.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
            reviewers: Users whose review is requested.
        """
        pull = self._issue(owner, repo, index, pull=True)
        for user in reviewers:
            self._user(user)
            if user not in pull["requested_reviewers"]:
                pull["requested_reviewers"].append(user)
        return {"requested_reviewers": pull["requested_reviewers"]}

    # == releases and tags ========================================================================
    @operation("releases", COLD, read_only=True)
    def release_list(self, owner: str, repo: str, draft: bool | None = None) -> dict:
        """List a repository's releases.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            draft: Only drafts (true) or only published (false); omit for both.
        """
        rel = self._repo(owner, repo)["releases"].values()
        return {"releases": [x for x in rel if draft is None or x["draft"] == draft]}

    @operation("releases", COLD, read_only=True)
    def release_get_by_tag(self, owner: str, repo: str, tag: str) -> dict:
        """Get the release of a tag.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            tag: Tag name, e.g. v1.0.0.
        """
        rel = self._repo(owner, repo)["releases"].get(tag)
        if rel is None:
            raise ToolError(f"no release for tag {tag!r}")
        return rel

    @operation("releases", COLD, read_only=True)
    def release_get_latest(self, owner: str, repo: str) -> dict:
        """Get the newest published (non-draft, non-prerelease) release.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        rel = [x for x in self._repo(owner, repo)["releases"].values() if not x["draft"] and not x["prerelease"]]
        if not rel:
            raise ToolError("no published stable release")
        return rel[-1]

    @operation("releases", COLD)
    def release_create(
        self, owner: str, repo: str, tag_name: str, name: str = "", body: str = "", draft: bool = False,
        prerelease: bool = False, target_commitish: str | None = None,
    ) -> dict:  # fmt: skip
        """Publish a release (creating its tag when it does not exist).

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            tag_name: Tag of the release, e.g. v1.0.0.
            name: Release title.
            body: Release notes (Markdown).
            draft: Save as a draft instead of publishing.
            prerelease: Mark as a pre-release.
            target_commitish: Branch the tag is created from; omit for the default branch.
        """
        r = self._repo(owner, repo)
        if tag_name in r["releases"]:
            raise ToolError(f"release {tag_name!r} already exists")
        target = self._branch(r, target_commitish)
        r["releases"][tag_name] = {"tag": tag_name, "name": name, "body": body, "draft": draft,
                                   "prerelease": prerelease, "target": target}  # fmt: skip
        r["tags"].setdefault(tag_name, r["branches"][target]["commit"])
        return r["releases"][tag_name]

    @operation("releases", COLD)
    def release_edit(
        self, owner: str, repo: str, tag: str, name: str | None = None, body: str | None = None,
        draft: bool | None = None, prerelease: bool | None = None,
    ) -> dict:  # fmt: skip
        """Edit a release: title, notes, or publish a draft (draft=false).

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            tag: Tag of the release.
            name: New title.
            body: New release notes.
            draft: false to publish a draft, true to turn it back into a draft.
            prerelease: Mark or unmark as a pre-release.
        """
        rel = self._repo(owner, repo)["releases"].get(tag)
        if rel is None:
            raise ToolError(f"no release for tag {tag!r}")
        for key, value in (("name", name), ("body", body), ("draft", draft), ("prerelease", prerelease)):
            if value is not None:
                rel[key] = value
        return rel

    @operation("releases", COLD, destructive=True)
    def release_delete(self, owner: str, repo: str, tag: str) -> dict:
        """Delete a release (its tag stays).

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            tag: Tag of the release.
        """
        r = self._repo(owner, repo)
        if tag not in r["releases"]:
            raise ToolError(f"no release for tag {tag!r}")
        del r["releases"][tag]
        return {"deleted": tag}

    @operation("releases", COLD, read_only=True)
    def tag_list(self, owner: str, repo: str) -> dict:
        """List a repository's tags and the commits they point to.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        return {"tags": [{"name": n, "commit": c} for n, c in self._repo(owner, repo)["tags"].items()]}

    @operation("releases", COLD)
    def tag_create(self, owner: str, repo: str, tag_name: str, target: str | None = None, message: str = "") -> dict:
        """Create a tag on a branch's head commit.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            tag_name: Name of the tag.
            target: Branch to tag; omit for the default branch.
            message: Annotation message.
        """
        r = self._repo(owner, repo)
        if tag_name in r["tags"]:
            raise ToolError(f"tag {tag_name!r} already exists")
        branch = self._branch(r, target)
        r["tags"][tag_name] = r["branches"][branch]["commit"]
        return {"name": tag_name, "commit": r["tags"][tag_name]}

    # == users, organizations, teams ==============================================================
    @operation("users", COLD, read_only=True)
    def user_get_current(self) -> dict:
        """Get the signed-in user (who "I" am)."""
        return self.db["users"][self.db["me"]]

    @operation("users", COLD, read_only=True)
    def user_get(self, username: str) -> dict:
        """Get a user's profile.

        Args:
            username: Login name.
        """
        return self._user(username)

    @operation("users", COLD, read_only=True)
    def user_list_repos(self, username: str) -> dict:
        """List the repositories a user owns.

        Args:
            username: Login name.
        """
        self._user(username)
        return {"repositories": [n for n, r in self.db["repos"].items() if r["owner"] == username]}

    @operation("orgs", COLD, read_only=True)
    def org_get(self, org: str) -> dict:
        """Get an organization's profile.

        Args:
            org: Organization name.
        """
        o = self._org(org)
        return {k: o[k] for k in ("name", "full_name", "description")}

    @operation("orgs", COLD, read_only=True)
    def org_list_members(self, org: str) -> dict:
        """List an organization's members.

        Args:
            org: Organization name.
        """
        return {"members": list(self._org(org)["members"])}

    @operation("orgs", COLD, read_only=True)
    def org_is_member(self, org: str, username: str) -> dict:
        """Check whether a user is a member of an organization.

        Args:
            org: Organization name.
            username: Login name.
        """
        return {"member": username in self._org(org)["members"]}

    @operation("orgs", COLD, read_only=True)
    def org_list_repos(self, org: str) -> dict:
        """List an organization's repositories.

        Args:
            org: Organization name.
        """
        self._org(org)
        return {"repositories": [n for n, r in self.db["repos"].items() if r["owner"] == org]}

    @operation("orgs", COLD, read_only=True)
    def team_list(self, org: str) -> dict:
        """List the teams of an organization.

        Args:
            org: Organization name.
        """
        return {"teams": [{"name": t["name"], "permission": t["permission"]} for t in self._org(org)["teams"].values()]}

    @operation("orgs", COLD, read_only=True)
    def team_list_members(self, org: str, team: str) -> dict:
        """List the members of a team.

        Args:
            org: Organization name.
            team: Team name.
        """
        t = self._org(org)["teams"].get(team)
        if t is None:
            raise ToolError(f"team {team!r} not found in {org}")
        return {"members": list(t["members"])}

    @operation("orgs", COLD)
    def team_add_member(self, org: str, team: str, username: str) -> dict:
        """Add a user to a team.

        Args:
            org: Organization name.
            team: Team name.
            username: Login name.
        """
        t = self._org(org)["teams"].get(team)
        if t is None:
            raise ToolError(f"team {team!r} not found in {org}")
        self._user(username)
        if username not in t["members"]:
            t["members"].append(username)
        return {"team": team, "members": t["members"]}

    @operation("orgs", COLD, destructive=True)
    def team_remove_member(self, org: str, team: str, username: str) -> dict:
        """Remove a user from a team.

        Args:
            org: Organization name.
            team: Team name.
            username: Login name.
        """
        t = self._org(org)["teams"].get(team)
        if t is None:
            raise ToolError(f"team {team!r} not found in {org}")
        if username not in t["members"]:
            raise ToolError(f"{username} is not in team {team}")
        t["members"].remove(username)
        return {"team": team, "members": t["members"]}

    # == collaborators ============================================================================
    @operation("collaborators", COLD, read_only=True)
    def collaborator_list(self, owner: str, repo: str) -> dict:
        """List a repository's collaborators and their permissions.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        return {
            "collaborators": [
                {"login": u, "permission": p} for u, p in self._repo(owner, repo)["collaborators"].items()
            ]
        }

    @operation("collaborators", COLD, read_only=True)
    def collaborator_check(self, owner: str, repo: str, collaborator: str) -> dict:
        """Check whether a user is a collaborator on a repository.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            collaborator: Login name.
        """
        return {"collaborator": collaborator in self._repo(owner, repo)["collaborators"]}

    @operation("collaborators", COLD)
    def collaborator_add(self, owner: str, repo: str, collaborator: str, permission: Permission = "write") -> dict:
        """Give a user access to a repository.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            collaborator: Login name.
            permission: Access level.
        """
        r = self._repo(owner, repo)
        self._user(collaborator)
        r["collaborators"][collaborator] = permission
        return {"login": collaborator, "permission": permission}

    @operation("collaborators", COLD, destructive=True)
    def collaborator_remove(self, owner: str, repo: str, collaborator: str) -> dict:
        """Take away a user's access to a repository.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            collaborator: Login name.
        """
        r = self._repo(owner, repo)
        if collaborator not in r["collaborators"]:
            raise ToolError(f"{collaborator} is not a collaborator")
        del r["collaborators"][collaborator]
        return {"removed": collaborator}

    # == webhooks =================================================================================
    @operation("webhooks", COLD, read_only=True)
    def hook_list(self, owner: str, repo: str) -> dict:
        """List a repository's webhooks.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
        """
        return {"hooks": list(self._repo(owner, repo)["hooks"].values())}

    @operation("webhooks", COLD, read_only=True)
    def hook_get(self, owner: str, repo: str, id: int) -> dict:
        """Get one webhook.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            id: Webhook id.
        """
        hook = self._repo(owner, repo)["hooks"].get(str(id))
        if hook is None:
            raise ToolError(f"webhook {id} not found")
        return hook

    @operation("webhooks", COLD)
    def hook_create(
        self, owner: str, repo: str, url: str, events: list[HookEvent], content_type: Literal["json", "form"] = "json",
        active: bool = True,
    ) -> dict:  # fmt: skip
        """Create a webhook that POSTs to a URL on the chosen events.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            url: Where to send the payloads.
            events: Events that trigger the webhook.
            content_type: Payload encoding.
            active: Whether it fires at once.
        """
        r = self._repo(owner, repo)
        if not url.startswith(("http://", "https://")):
            raise ToolError("url must start with http:// or https://")
        hook_id = r["next_hook"]
        r["next_hook"] += 1
        r["hooks"][str(hook_id)] = {"id": hook_id, "url": url, "events": list(events), "active": active,
                                    "content_type": content_type}  # fmt: skip
        return r["hooks"][str(hook_id)]

    @operation("webhooks", COLD)
    def hook_edit(
        self, owner: str, repo: str, id: int, url: str | None = None, events: list[HookEvent] | None = None,
        active: bool | None = None,
    ) -> dict:  # fmt: skip
        """Change a webhook's URL, events, or switch it on or off.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            id: Webhook id.
            url: New URL.
            events: New list of events.
            active: true to enable, false to disable.
        """
        hook = self._repo(owner, repo)["hooks"].get(str(id))
        if hook is None:
            raise ToolError(f"webhook {id} not found")
        for key, value in (("url", url), ("events", events), ("active", active)):
            if value is not None:
                hook[key] = value
        return hook

    @operation("webhooks", COLD, destructive=True)
    def hook_delete(self, owner: str, repo: str, id: int) -> dict:
        """Delete a webhook.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            id: Webhook id.
        """
        r = self._repo(owner, repo)
        if str(id) not in r["hooks"]:
            raise ToolError(f"webhook {id} not found")
        del r["hooks"][str(id)]
        return {"deleted": id}

    # == notifications ============================================================================
    @operation("notifications", COLD, read_only=True)
    def notify_list(self, all: bool = False) -> dict:
        """List your notifications (unread only unless all is true).

        Args:
            all: Include notifications already read.
        """
        items = self.db["notifications"].values()
        return {"notifications": [n for n in items if all or n["unread"]]}

    @operation("notifications", COLD)
    def notify_read_all(self, repo: str | None = None) -> dict:
        """Mark all your notifications as read, or only those of one repository.

        Args:
            repo: Only this repository (owner/name).
        """
        count = 0
        for n in self.db["notifications"].values():
            if n["unread"] and repo in (None, n["repo"]):
                n["unread"] = False
                count += 1
        return {"marked_read": count}

    @operation("notifications", COLD)
    def notify_read_thread(self, id: int) -> dict:
        """Mark one notification thread as read.

        Args:
            id: Notification id.
        """
        n = self.db["notifications"].get(str(id))
        if n is None:
            raise ToolError(f"notification {id} not found")
        n["unread"] = False
        return n
