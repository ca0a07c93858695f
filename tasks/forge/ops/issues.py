"""Issues: list, search, get, open, edit, labels, deadline, lock, subscribers, time tracking."""

from __future__ import annotations

from typing import Literal

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import (
    COLD,
    HOT,
    IssueState,
    OpenOrClosed,
    add_once,
    in_state,
    issue_view,
    set_given,
)


class IssueOps(ForgeBase):
    """The issues category (pull requests share the numbering, but have their own operations)."""

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
            if issue["is_pull"] or not in_state(issue, state):
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
                if issue["is_pull"] or q.lower() not in text or not in_state(issue, state):
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
        return {**issue_view(issue), "body": issue["body"]}

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
        if milestone:
            self._milestone(r, milestone)
        return issue_view(self._open_issue(r, title, body, labels, assignees, milestone))

    @operation("issues", HOT)
    def issue_edit(
        self,
        owner: str,
        repo: str,
        index: int,
        title: str | None = None,
        body: str | None = None,
        state: OpenOrClosed | None = None,
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
        if milestone is not None:
            self._milestone(r, milestone)
        for user in assignees or []:
            self._user(user)
        set_given(issue, title=title, body=body, state=state, milestone=milestone)
        if assignees is not None:
            issue["assignees"] = list(assignees)
        return issue_view(issue)

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
        add_once(issue["labels"], *self._label_names(r, labels))
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
        add_once(issue["subscribers"], user)
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
