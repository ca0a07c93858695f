"""What the forge's operation modules share: traffic weights, argument types, views and small helpers.

The argument types (``IssueState``, ``BranchRules`` ...) appear in operation signatures, so they are
part of the catalog's schemas: change one and every surface shows the change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from surfbench.bench.contracts.backend import ToolError

HOT = 70.0 / 15  # weight of each of the 15 hot operations
COLD = 30.0 / 81  # weight of each of the other 81
NOW = "2026-11-30T12:00:00Z"  # the scenario's clock: every commit and comment made in an episode gets it

IssueState = Literal["open", "closed", "all"]
OpenOrClosed = Literal["open", "closed"]
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


def short_sha(*parts: str) -> str:
    """A 7-digit commit id that depends only on ``parts`` (runs are reproducible)."""
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:7]


def issue_view(issue: dict[str, Any]) -> dict[str, Any]:
    """What the model sees of an issue or pull request (a comment count, not the comments)."""
    keys = ("number", "title", "state", "author", "labels", "assignees", "milestone", "deadline", "locked")
    view = {k: issue[k] for k in keys}
    view["comments"] = len(issue["comments"])
    if issue["is_pull"]:
        view.update({k: issue[k] for k in ("head", "base", "merged")})
    return view


def found(table: Mapping[str, Any], key: str, missing: str) -> Any:
    """``table[key]``, or a ToolError saying ``missing`` when there is no such entry."""
    entry = table.get(key)
    if entry is None:
        raise ToolError(missing)
    return entry


def set_given(target: dict[str, Any], **changes: Any) -> list[str]:
    """Set each field passed with a value other than None (an edit's optional fields); their names."""
    given = [key for key, value in changes.items() if value is not None]
    for key in given:
        target[key] = changes[key]
    return given


def next_id(r: dict[str, Any], counter: str) -> int:
    """Take the repository's next number from ``counter`` (next_number, next_comment ...)."""
    value: int = r[counter]
    r[counter] += 1
    return value


def add_once(items: list[Any], *new: Any) -> list[Any]:
    """Append each of ``new`` that ``items`` lacks (labels, subscribers, members ...); ``items``."""
    for item in new:
        if item not in items:
            items.append(item)
    return items


def in_state(item: Mapping[str, Any], state: str) -> bool:
    """Whether an issue, pull request or milestone passes a state filter ("all" passes everything)."""
    return state == "all" or item["state"] == state
