"""Webhooks of a repository, and the signed-in user's notifications."""

from __future__ import annotations

from typing import Any, Literal

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, HookEvent, found, next_id, set_given


class HookOps(ForgeBase):
    """The webhooks and notifications categories: how the forge tells others what happened."""

    # == webhooks =================================================================================
    def _hook(self, r: dict[str, Any], hook_id: int) -> dict[str, Any]:
        return found(r["hooks"], str(hook_id), f"webhook {hook_id} not found")

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
        return self._hook(self._repo(owner, repo), id)

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
        hook_id = next_id(r, "next_hook")
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
        hook = self._hook(self._repo(owner, repo), id)
        set_given(hook, url=url, events=events, active=active)
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
        self._hook(r, id)
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
        n = found(self.db["notifications"], str(id), f"notification {id} not found")
        n["unread"] = False
        return n
