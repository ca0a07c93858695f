"""The ``oss`` forge's seeded state: the public forge, where the same names hold other data than on ``work``.

``work`` is the forge suite's own scenario (tasks/forge/scenario.py). On ``oss`` the repository acme/web is the
public mirror, with other issues under the same numbers, so that a call that reaches the wrong forge reads the
wrong issue or writes where the task's state checks do not look.
"""

from __future__ import annotations

from typing import Any

from surfbench.tasks.forge.scenario import _issue, small_repo


def oss_web() -> dict[str, Any]:
    web = small_repo("acme", "web", "Public mirror of the acme web front end")
    web["stars"] = 1280
    web["topics"] = ["web", "open-source"]
    web["labels"]["enhancement"] = {"name": "enhancement", "color": "#84b6eb", "description": "New feature"}
    web["labels"]["good first issue"] = {"name": "good first issue", "color": "#7057ff", "description": "Newcomers"}
    web["issues"] = {
        "1": _issue(1, "Build fails on Node 22", "npm ci exits with ERR_REQUIRE_ESM.", "erin", labels=["bug"]),
        "2": _issue(2, "Translate the login page to German", "Strings live in src/i18n.", "frank",
                    labels=["enhancement", "good first issue"]),
        "3": _issue(3, "Safari 17 renders the header twice", "Only with reduced motion on.", "frank",
                    labels=["bug"]),
    }  # fmt: skip
    web["next_number"] = 4
    web["next_comment"] = 500
    return web


def oss_default() -> dict[str, Any]:
    sdk = small_repo("acme", "sdk", "The acme client SDK")
    sdk["issues"] = {"1": _issue(1, "Publish wheels for Python 3.13", "pip builds from source.", "erin")}
    sdk["next_number"] = 2
    sdk["next_comment"] = 600
    return {
        "me": "alice",
        "users": {
            "alice": {"login": "alice", "full_name": "Alice Martin", "email": "alice@oss.example", "admin": False},
            "erin": {"login": "erin", "full_name": "Erin Novak", "email": "erin@oss.example", "admin": True},
            "frank": {"login": "frank", "full_name": "Frank Osei", "email": "frank@oss.example", "admin": False},
        },
        "orgs": {
            "acme": {
                "name": "acme",
                "full_name": "Acme open source",
                "description": "Acme's public projects.",
                "members": ["alice", "erin"],
                "teams": {"maintainers": {"name": "maintainers", "permission": "admin", "members": ["erin"]}},
            }
        },  # fmt: skip
        "repos": {"acme/web": oss_web(), "acme/sdk": sdk, "alice/blog": small_repo("alice", "blog", "My blog")},
        "notifications": {},
    }


OSS_SCENARIOS = {"default": oss_default}
"""The oss forge's state per task scenario (the work forge takes the forge suite's scenario of the same name)."""
