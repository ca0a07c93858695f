"""Releases and tags."""

from __future__ import annotations

from typing import Any

from surfbench.bench.contracts.backend import ToolError, operation
from surfbench.tasks.forge.ops.base import ForgeBase
from surfbench.tasks.forge.ops.common import COLD, found, set_given


class ReleaseOps(ForgeBase):
    """The releases category: releases and the tags they stand on."""

    def _release(self, r: dict[str, Any], tag: str) -> dict[str, Any]:
        return found(r["releases"], tag, f"no release for tag {tag!r}")

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
        return self._release(self._repo(owner, repo), tag)

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
        target, commit = self._head(r, target_commitish)
        r["releases"][tag_name] = {"tag": tag_name, "name": name, "body": body, "draft": draft,
                                   "prerelease": prerelease, "target": target}  # fmt: skip
        r["tags"].setdefault(tag_name, commit)
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
        rel = self._release(self._repo(owner, repo), tag)
        set_given(rel, name=name, body=body, draft=draft, prerelease=prerelease)
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
        self._release(r, tag)
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
        r["tags"][tag_name] = self._head(r, target).commit
        return {"name": tag_name, "commit": r["tags"][tag_name]}
