"""Comments on issues and pull requests."""

from __future__ import annotations

from typing import Any, NamedTuple

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, HOT, NOW, next_id


class PlacedComment(NamedTuple):
    """A comment and the issue or pull request it is on."""

    issue: dict[str, Any]
    comment: dict[str, Any]


class CommentOps(ForgeBase):
    """The comments category: comments on issues and pull requests."""

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
        comment = {"id": next_id(r, "next_comment"), "author": self.db["me"], "body": body, "created": NOW}
        issue["comments"].append(comment)
        return comment

    def _comment(self, owner: str, repo: str, comment_id: int) -> PlacedComment:
        for issue in self._repo(owner, repo)["issues"].values():
            for c in issue["comments"]:
                if c["id"] == comment_id:
                    return PlacedComment(issue, c)
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
        comment = self._comment(owner, repo, id).comment
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
