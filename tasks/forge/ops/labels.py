"""Labels and milestones of a repository."""

from __future__ import annotations

from typing import Any

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, IssueState, OpenOrClosed, found, in_state, set_given


class LabelOps(ForgeBase):
    """The labels and milestones categories: what a repository's issues are sorted by."""

    # == labels ===================================================================================
    def _label(self, r: dict[str, Any], name: str) -> dict[str, Any]:
        return found(r["labels"], name, f"label {name!r} not found")

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
        return self._label(self._repo(owner, repo), name)

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
        label = self._label(r, name)
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
        self._label(r, name)
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
        return {"milestones": [m for m in ms if in_state(m, state)]}

    @operation("milestones", COLD, read_only=True)
    def milestone_get(self, owner: str, repo: str, title: str) -> dict:
        """Get one milestone with its open and closed issue counts.

        Args:
            owner: Owner of the repository.
            repo: Name of the repository.
            title: Milestone title.
        """
        r = self._repo(owner, repo)
        m = self._milestone(r, title)
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
        self, owner: str, repo: str, title: str, state: OpenOrClosed | None = None,
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
        m = self._milestone(self._repo(owner, repo), title)
        set_given(m, state=state, due_on=due_on, description=description)
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
        self._milestone(r, title)
        del r["milestones"][title]
        for issue in r["issues"].values():
            if issue["milestone"] == title:
                issue["milestone"] = None
        return {"deleted": title}
