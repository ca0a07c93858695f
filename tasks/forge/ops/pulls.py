"""Pull requests and their reviews."""

from __future__ import annotations

from typing import Any

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import (
    COLD,
    HOT,
    IssueState,
    MergeStyle,
    OpenOrClosed,
    ReviewEvent,
    add_once,
    in_state,
    issue_view,
    next_id,
    set_given,
    short_sha,
)


class PullOps(ForgeBase):
    """The pulls and reviews categories."""

    # == pull requests ============================================================================
    def _pull(self, owner: str, repo: str, index: int) -> dict[str, Any]:
        return self._issue(owner, repo, index, pull=True)

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
        return {"pulls": [{k: p[k] for k in keys} for p in pulls if in_state(p, state)]}

    @operation("pulls", HOT, read_only=True)
    def pull_get(self, owner: str, repo: str, index: int) -> dict:
        """Get one pull request: branches, state, whether it is merged, changed files.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
        """
        pull = self._pull(owner, repo, index)
        return {**issue_view(pull), "body": pull["body"], "files": pull["files"]}

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
        pull = self._open_issue(
            r, title, body, [], assignees, None, head=head, base=base, merged=False, merge_style=None, files=[],
            reviews=[], requested_reviewers=[],
        )  # fmt: skip
        return issue_view(pull)

    @operation("pulls", COLD)
    def pull_edit(
        self, owner: str, repo: str, index: int, title: str | None = None, body: str | None = None,
        state: OpenOrClosed | None = None, base: str | None = None,
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
        pull = self._pull(owner, repo, index)
        if base is not None:
            self._branch(r, base)
        set_given(pull, title=title, body=body, state=state, base=base)
        return issue_view(pull)

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
        pull = self._pull(owner, repo, index)
        if pull["merged"] or pull["state"] != "open":
            raise ToolError(f"pull request #{index} is not open")
        pull.update({"merged": True, "state": "closed", "merge_style": do})
        r["branches"][pull["base"]]["commit"] = short_sha(owner, repo, "merge", str(index))
        if delete_branch_after_merge and pull["head"] in r["branches"]:
            self._drop_branch(r, pull["head"])
        return {"merged": True, "style": do}

    @operation("pulls", COLD, read_only=True)
    def pull_is_merged(self, owner: str, repo: str, index: int) -> dict:
        """Check whether a pull request has been merged.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
        """
        return {"merged": self._pull(owner, repo, index)["merged"]}

    @operation("pulls", COLD, read_only=True)
    def pull_files(self, owner: str, repo: str, index: int) -> dict:
        """List the files a pull request changes.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
        """
        return {"files": list(self._pull(owner, repo, index)["files"])}

    # == reviews ==================================================================================
    @operation("reviews", COLD, read_only=True)
    def review_list(self, owner: str, repo: str, index: int) -> dict:
        """List the reviews of a pull request.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            index: Pull request number.
        """
        return {"reviews": list(self._pull(owner, repo, index)["reviews"])}

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
        pull = self._pull(owner, repo, index)
        review = {"id": next_id(r, "next_review"), "reviewer": self.db["me"], "state": event, "body": body}
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
        pull = self._pull(owner, repo, index)
        for user in reviewers:
            self._user(user)
            add_once(pull["requested_reviewers"], user)
        return {"requested_reviewers": pull["requested_reviewers"]}
