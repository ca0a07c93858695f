"""The seeded forge state; deterministic: every episode starts from exactly this.

Users, an organisation with teams, repositories with issues, pull requests, labels, milestones,
branches, files, commits, releases and webhooks.
"""

from __future__ import annotations

from typing import Any

T0 = "2026-10-01T09:00:00Z"


def _commit(sha: str, message: str, author: str, date: str) -> dict[str, Any]:
    return {"sha": sha, "message": message, "author": author, "date": date}


def _issue(number: int, title: str, body: str, author: str, state: str = "open", labels: list[str] | None = None,
           assignees: list[str] | None = None, milestone: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "number": number, "title": title, "body": body, "author": author, "state": state,
        "labels": labels or [], "assignees": assignees or [], "milestone": milestone, "deadline": None,
        "locked": False, "comments": [], "subscribers": [author], "times": [], "is_pull": False,
    }  # fmt: skip


def _pull(number: int, title: str, head: str, base: str, author: str, state: str = "open",
          files: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    pull = _issue(number, title, f"Changes from {head}.", author, state)
    pull.update({"is_pull": True, "head": head, "base": base, "merged": False, "merge_style": None,
                 "files": files or [], "reviews": [], "requested_reviewers": []})  # fmt: skip
    return pull


def web_repo() -> dict[str, Any]:
    issues = {
        "1": _issue(1, "Login page returns 500 on empty password", "Submitting the form with no password crashes.",
                    "bob", labels=["bug"], assignees=["alice"], milestone="v1.0"),
        "2": _issue(2, "Add dark mode", "Users keep asking for a dark theme.", "carol", labels=["enhancement"]),
        "3": _issue(3, "Typo in README install section", "It says 'npm instal'.", "dave", labels=["docs"]),
        "4": _issue(4, "Session cookie not marked Secure", "The cookie lacks the Secure flag.", "bob",
                    labels=["bug", "security"], milestone="v1.0"),
        "5": _issue(5, "Old IE11 polyfills can go", "We dropped IE11 last year.", "alice", state="closed"),
        "6": _issue(6, "Slow dashboard with 1000+ projects", "Rendering takes 8 s.", "carol",
                    labels=["bug", "performance"]),
        "7": _pull(7, "Fix empty password crash", "fix/empty-password", "main", "alice", files=["src/login.py"]),
        "8": _pull(8, "Dark mode prototype", "feature/dark-mode", "main", "carol",
                   files=["src/theme.css", "src/app.py"]),
    }  # fmt: skip
    issues["1"]["comments"] = [
        {"id": 101, "author": "alice", "body": "I can reproduce this on main.", "created": T0},
        {"id": 102, "author": "bob", "body": "Stack trace attached in the logs channel.", "created": T0},
    ]
    issues["2"]["comments"] = [{"id": 103, "author": "dave", "body": "+1, my eyes thank you.", "created": T0}]
    issues["7"]["reviews"] = [{"id": 201, "reviewer": "bob", "state": "COMMENT", "body": "Looks fine, one nit."}]
    return {
        "owner": "acme", "name": "web", "description": "The acme web front end", "private": False,
        "archived": False, "default_branch": "main", "website": "", "topics": ["web", "frontend"],
        "template": False, "stars": 42, "forks": ["dave/web"], "has_wiki": True,
        "branches": {
            "main": {"commit": "a1b2c3d", "protected": True},
            "dev": {"commit": "e4f5a6b", "protected": False},
            "fix/empty-password": {"commit": "c7d8e9f", "protected": False},
            "feature/dark-mode": {"commit": "f0a1b2c", "protected": False},
        },
        "protections": {"main": {"branch": "main", "required_approvals": 1, "enable_push": False,
                                 "block_on_rejected_reviews": True}},
        "files": {
            "main": {
                "README.md": "# web\n\nInstall with `npm instal`.\n",
                "src/app.py": "def main():\n    print('hello')\n",
                "src/login.py": "def login(user, password):\n    return check(user, password)\n",
                "docs/index.md": "# Docs\n",
                ".gitignore": "node_modules/\n",
            },
            "dev": {"README.md": "# web (dev)\n", "src/app.py": "def main():\n    print('dev')\n"},
        },
        "commits": [
            _commit("a1b2c3d", "Bump version to 0.9.1", "alice", "2026-09-30T17:00:00Z"),
            _commit("9f8e7d6", "Fix header alignment", "bob", "2026-09-29T12:00:00Z"),
            _commit("5c4b3a2", "Add login form", "alice", "2026-09-25T08:30:00Z"),
            _commit("1a2b3c4", "Initial commit", "alice", "2026-09-01T10:00:00Z"),
        ],
        "statuses": {"a1b2c3d": [{"context": "ci/build", "state": "success", "description": "Build passed"}]},
        "issues": issues,
        "next_number": 9,
        "labels": {
            "bug": {"name": "bug", "color": "#ee0701", "description": "Something is broken"},
            "enhancement": {"name": "enhancement", "color": "#84b6eb", "description": "New feature"},
            "docs": {"name": "docs", "color": "#0075ca", "description": "Documentation"},
            "security": {"name": "security", "color": "#b60205", "description": "Security issue"},
            "performance": {"name": "performance", "color": "#fbca04", "description": "Speed"},
            "help wanted": {"name": "help wanted", "color": "#008672", "description": "Extra attention"},
        },
        "milestones": {
            "v1.0": {"title": "v1.0", "state": "open", "due_on": "2026-12-15", "description": "First stable"},
            "v0.9": {"title": "v0.9", "state": "closed", "due_on": "2026-08-01", "description": "Beta"},
        },
        "releases": {
            "v0.9.0": {"tag": "v0.9.0", "name": "Beta", "body": "First beta.", "draft": False, "prerelease": False,
                       "target": "main"},
            "v1.0.0-rc1": {"tag": "v1.0.0-rc1", "name": "1.0 RC1", "body": "Release candidate.", "draft": True,
                           "prerelease": True, "target": "main"},
        },
        "tags": {"v0.9.0": "1a2b3c4", "v1.0.0-rc1": "a1b2c3d"},
        "hooks": {"1": {"id": 1, "url": "https://ci.acme.example/hook", "events": ["push"], "active": True,
                        "content_type": "json"}},
        "next_hook": 2,
        "collaborators": {"bob": "write", "carol": "read"},
        "next_comment": 104,
        "next_review": 202,
    }  # fmt: skip


def small_repo(owner: str, name: str, description: str, private: bool = False) -> dict[str, Any]:
    return {
        "owner": owner, "name": name, "description": description, "private": private, "archived": False,
        "default_branch": "main", "website": "", "topics": [], "template": False, "stars": 3, "forks": [],
        "has_wiki": False, "branches": {"main": {"commit": "0f0f0f0", "protected": False}}, "protections": {},
        "files": {"main": {"README.md": f"# {name}\n"}},
        "commits": [_commit("0f0f0f0", "Initial commit", owner, "2026-09-10T10:00:00Z")], "statuses": {},
        "issues": {}, "next_number": 1,
        "labels": {"bug": {"name": "bug", "color": "#ee0701", "description": "Something is broken"}},
        "milestones": {}, "releases": {}, "tags": {}, "hooks": {}, "next_hook": 1, "collaborators": {},
        "next_comment": 1, "next_review": 1,
    }  # fmt: skip


def default() -> dict[str, Any]:
    api = small_repo("acme", "api", "The acme REST API")
    api["issues"] = {
        "1": _issue(1, "Rate limit headers missing", "Responses lack X-RateLimit-*.", "bob", labels=["bug"]),
        "2": _issue(2, "Document pagination", "The docs never mention page/limit.", "carol"),
    }
    api["next_number"] = 3
    api["next_comment"] = 300
    return {
        "me": "alice",
        "users": {
            "alice": {"login": "alice", "full_name": "Alice Martin", "email": "alice@acme.example", "admin": True},
            "bob": {"login": "bob", "full_name": "Bob Chen", "email": "bob@acme.example", "admin": False},
            "carol": {"login": "carol", "full_name": "Carol Diaz", "email": "carol@acme.example", "admin": False},
            "dave": {"login": "dave", "full_name": "Dave Okafor", "email": "dave@example.org", "admin": False},
        },
        "orgs": {
            "acme": {
                "name": "acme", "full_name": "Acme Corp", "description": "We make everything.",
                "members": ["alice", "bob", "carol"],
                "teams": {
                    "core": {"name": "core", "permission": "write", "members": ["alice", "bob"]},
                    "docs": {"name": "docs", "permission": "read", "members": ["carol"]},
                },
            }
        },  # fmt: skip
        "repos": {
            "acme/web": web_repo(),
            "acme/api": api,
            "alice/dotfiles": small_repo("alice", "dotfiles", "My shell setup", private=True),
            "bob/notes": small_repo("bob", "notes", "Scratch notes"),
        },
        "notifications": {
            "1": {"id": 1, "repo": "acme/web", "subject": "Login page returns 500 on empty password", "unread": True,
                  "type": "Issue"},
            "2": {"id": 2, "repo": "acme/web", "subject": "Fix empty password crash", "unread": True, "type": "Pull"},
            "3": {"id": 3, "repo": "acme/api", "subject": "Document pagination", "unread": False, "type": "Issue"},
        },
    }  # fmt: skip


SCENARIOS = {"default": default}
