"""Users, organizations and teams."""

from __future__ import annotations

from typing import Any

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, add_once, found


class AccountOps(ForgeBase):
    """The users and orgs categories: people, organizations and their teams."""

    def _team(self, org: str, team: str) -> dict[str, Any]:
        return found(self._org(org)["teams"], team, f"team {team!r} not found in {org}")

    def _repos_of(self, owner: str) -> dict[str, list[str]]:
        return {"repositories": [name for name, r in self.db["repos"].items() if r["owner"] == owner]}

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
        return self._repos_of(username)

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
        return self._repos_of(org)

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
        t = self._team(org, team)
        return {"members": list(t["members"])}

    @operation("orgs", COLD)
    def team_add_member(self, org: str, team: str, username: str) -> dict:
        """Add a user to a team.

        Args:
            org: Organization name.
            team: Team name.
            username: Login name.
        """
        t = self._team(org, team)
        self._user(username)
        add_once(t["members"], username)
        return {"team": team, "members": t["members"]}

    @operation("orgs", COLD, destructive=True)
    def team_remove_member(self, org: str, team: str, username: str) -> dict:
        """Remove a user from a team.

        Args:
            org: Organization name.
            team: Team name.
            username: Login name.
        """
        t = self._team(org, team)
        if username not in t["members"]:
            raise ToolError(f"{username} is not in team {team}")
        t["members"].remove(username)
        return {"team": team, "members": t["members"]}
