"""A repository's collaborators and their permissions."""

from __future__ import annotations

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, Permission


class CollaboratorOps(ForgeBase):
    """The collaborators category: who besides the owner may work on a repository."""

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
