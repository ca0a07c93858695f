"""The forge's store and the lookups every category shares; the operation mixins subclass it.

A lookup either returns the entry or raises :class:`ToolError` with the message the model sees, so an
operation reads as the happy path.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from surfbench.bench.contracts.backend import OperationBackend, ToolError
from surfbench.tasks.forge.ops.common import NOW, found, next_id, short_sha
from surfbench.tasks.forge.scenario import SCENARIOS


class Commit(NamedTuple):
    """A commit just made on a branch of a repository."""

    repo: dict[str, Any]
    branch: str
    sha: str


class BranchHead(NamedTuple):
    """A branch and the commit at its tip."""

    name: str
    commit: str


class ForgeBase(OperationBackend):
    """In-memory forge store. ``state()`` is the whole store (final-state checks read it)."""

    def __init__(self) -> None:
        super().__init__()
        self.db: dict[str, Any] = {}

    def reset(self, scenario: str | None = None) -> None:
        """Load a seeded scenario (``default`` when None)."""
        name = scenario or "default"
        if name not in SCENARIOS:
            raise ValueError(f"unknown forge scenario {name!r}; known: {', '.join(SCENARIOS)}")
        self.db = SCENARIOS[name]()

    def state(self) -> dict[str, Any]:
        """A copy of the whole store."""
        return copy.deepcopy(self.db)

    # -- lookups ----------------------------------------------------------------------------------
    def _repo(self, owner: str, repo: str) -> dict[str, Any]:
        found_repo = self.db["repos"].get(f"{owner}/{repo}")
        if found_repo is None:
            if "/" in owner or "/" in repo:
                raise ToolError(
                    f"repository {owner}/{repo} not found: pass the owner and the name separately, "
                    "e.g. owner='acme', repo='web' for acme/web"
                )
            raise ToolError(f"repository {owner}/{repo} not found")
        return found_repo

    def _issue(self, owner: str, repo: str, index: int, pull: bool | None = None) -> dict[str, Any]:
        r = self._repo(owner, repo)
        issue = r["issues"].get(str(index))
        if issue is None or (pull is not None and issue["is_pull"] != pull):
            kind = "pull request" if pull else "issue"
            raise ToolError(f"{kind} #{index} not found in {owner}/{repo}")
        return issue

    def _user(self, username: str) -> dict[str, Any]:
        return found(self.db["users"], username, f"user {username!r} not found")

    def _org(self, org: str) -> dict[str, Any]:
        return found(self.db["orgs"], org, f"organization {org!r} not found")

    def _label_names(self, r: dict[str, Any], labels: list[str]) -> list[str]:
        missing = [name for name in labels if name not in r["labels"]]
        if missing:
            raise ToolError(f"label(s) {', '.join(missing)} do not exist in {r['owner']}/{r['name']}")
        return labels

    def _milestone(self, r: dict[str, Any], title: str) -> dict[str, Any]:
        return found(r["milestones"], title, f"milestone {title!r} not found")

    def _branch(self, r: dict[str, Any], branch: str | None) -> str:
        name = branch or r["default_branch"]
        if name not in r["branches"]:
            raise ToolError(f"branch {name!r} not found in {r['owner']}/{r['name']}")
        return name

    def _head(self, r: dict[str, Any], branch: str | None) -> BranchHead:
        """The branch (the default one when ``branch`` is None) and its head commit."""
        name = self._branch(r, branch)
        return BranchHead(name, r["branches"][name]["commit"])

    # -- shared writes ----------------------------------------------------------------------------
    def _drop_branch(self, r: dict[str, Any], branch: str) -> None:
        del r["branches"][branch]
        r["files"].pop(branch, None)

    def _commit(
        self, owner: str, repo: str, filepath: str, branch: str | None, message: str, must_exist: bool, hint: str = ""
    ) -> Commit:
        """Commit a change to ``filepath`` on a branch, once the file exists (or does not); ``hint`` ends the error."""
        r = self._repo(owner, repo)
        name = self._branch(r, branch)
        if (filepath in r["files"].get(name, {})) != must_exist:
            problem = "does not exist" if must_exist else "already exists"
            raise ToolError(f"{filepath!r} {problem} on {name!r}{hint}")
        sha = short_sha(owner, repo, filepath, message, str(len(r["commits"])))
        r["commits"].insert(0, {"sha": sha, "message": message, "author": self.db["me"], "date": NOW})
        r["branches"][name]["commit"] = sha
        return Commit(r, name, sha)

    def _open_issue(
        self, r: dict[str, Any], title: str, body: str, labels: list[str], assignees: list[str] | None,
        milestone: str | None, **pull: Any,
    ) -> dict[str, Any]:  # fmt: skip
        """File a new issue (or, with the pull fields, a pull request) under the repository's next number."""
        number = next_id(r, "next_number")
        issue = {
            "number": number, "title": title, "body": body, "author": self.db["me"], "state": "open",
            "labels": labels, "assignees": list(assignees or []), "milestone": milestone, "deadline": None,
            "locked": False, "comments": [], "subscribers": [self.db["me"]], "times": [], "is_pull": bool(pull),
            **pull,
        }  # fmt: skip
        r["issues"][str(number)] = issue
        return issue
