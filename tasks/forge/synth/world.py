"""The forge's world for ``surfbench synth``: named pools of bundles read from the seeded scenario.

``pools(state)`` gets a fresh backend's state (the default scenario) and returns, per pool, bundles whose
fields are named after the operations' arguments where they can be (``owner``, ``repo``, ``index``,
``branch``, ``tag``, ``username`` ...), with a few more that phrasings mention (``title``, ``author``).
Every bundle names something that exists; a phrasing that creates something draws its new name from
``values`` in templates.yaml instead.
"""

from __future__ import annotations

import re
from typing import Any

STOP = frozenset({"the", "and", "for", "with", "from", "not", "add", "old", "can", "our", "all", "page", "on"})


def _keyword(title: str, others: list[str]) -> str | None:
    """A word of ``title`` that no other issue title has (what a user would search for)."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9]{3,}", title) if w.lower() not in STOP]
    for word in words:
        if not any(word.lower() in o.lower() for o in others):
            return word.lower()
    return None


def _repos(state: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return sorted(state["repos"].items())


def pools(state: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}

    def add(pool: str, bundle: dict[str, Any]) -> None:
        out.setdefault(pool, []).append(bundle)

    users = sorted(state["users"])
    texts = [f"{i['title']} {i['body']}" for _, r in _repos(state) for i in r["issues"].values()]
    for full, r in _repos(state):
        where = {"owner": r["owner"], "repo": r["name"], "full": full}
        add("repo", {**where, "description": r["description"], "default_branch": r["default_branch"],
                     "stars": r["stars"], "visibility": "private" if r["private"] else "public",
                     "topics": list(r["topics"])})  # fmt: skip
        _issues(r, where, texts, add)
        _branches(r, where, add)
        for name, label in sorted(r["labels"].items()):
            add("label", {**where, "name": name, "color": label["color"], "description": label["description"]})
        for title, m in sorted(r["milestones"].items()):
            add("milestone", {**where, "title": title, "milestone": title, "state": m["state"], "due_on": m["due_on"]})
        for c in r["commits"]:
            bundle = {**where, "sha": c["sha"], "message": c["message"], "author": c["author"], "date": c["date"][:10]}
            add("commit", bundle)
            if c["sha"] in r["statuses"]:
                add("status_commit", {**bundle, "ref": c["sha"], "context": r["statuses"][c["sha"]][0]["context"]})
        for tag, rel in sorted(r["releases"].items()):
            add("release", {**where, "tag": tag, "name": rel["name"], "draft": rel["draft"]})
        for tag, commit in sorted(r["tags"].items()):
            add("tag", {**where, "tag": tag, "commit": commit})
        for hook_id, hook in sorted(r["hooks"].items()):
            add("hook", {**where, "id": int(hook_id), "url": hook["url"], "events": list(hook["events"])})
        for login, permission in sorted(r["collaborators"].items()):
            add("collaborator", {**where, "collaborator": login, "permission": permission})
        for login in users:
            if login not in r["collaborators"] and login != r["owner"]:
                add("outsider", {**where, "collaborator": login})
    for word in _search_words(state):
        add("search", {"q": word})
    for login in users:
        u = state["users"][login]
        add("user", {"username": login, "full_name": u["full_name"], "email": u["email"]})
    for org, o in sorted(state["orgs"].items()):
        add("org", {"org": org, "full_name": o["full_name"], "description": o["description"]})
        for login in users:
            add("org_user", {"org": org, "username": login, "member": login in o["members"]})
        for team, t in sorted(o["teams"].items()):
            add("team", {"org": org, "team": team, "permission": t["permission"]})
            for login in users:
                add(
                    "team_member" if login in t["members"] else "team_outsider",
                    {"org": org, "team": team, "username": login},
                )
    for nid, n in sorted(state["notifications"].items()):
        add("notification", {"id": int(nid), "subject": n["subject"], "full": n["repo"], "unread": n["unread"]})
    for full in sorted({n["repo"] for n in state["notifications"].values() if n["unread"]}):
        add("unread_repo", {"repo": full})
    return out


def _issues(r: dict[str, Any], where: dict[str, Any], texts: list[str], add: Any) -> None:
    labels = sorted(r["labels"])
    for number, issue in sorted(r["issues"].items(), key=lambda kv: int(kv[0])):
        base = {**where, "index": int(number), "title": issue["title"], "author": issue["author"],
                "state": issue["state"], "kind": "pull request" if issue["is_pull"] else "issue"}  # fmt: skip
        add("thread", base)
        for c in issue["comments"]:
            add("comment", {**where, "id": c["id"], "index": int(number), "body": c["body"], "author": c["author"]})
        if issue["is_pull"]:
            add("pull", {**base, "head": issue["head"], "base": issue["base"]})
            add("open_pull" if issue["state"] == "open" and not issue["merged"] else "closed_pull", base)
            continue
        others = [t for t in texts if not t.startswith(issue["title"])]
        word = _keyword(issue["title"], others)
        add("issue", {**base, "keyword": word, "milestone": issue["milestone"]})
        add(f"{issue['state']}_issue", {**base, "keyword": word})
        for label in issue["labels"]:
            add("issue_label", {**base, "label": label})
        if issue["labels"]:
            add("labelled_issue", {**base, "labels": list(issue["labels"])})
        missing = [label for label in labels if label not in issue["labels"]]
        for label in missing:
            add("issue_new_label", {**base, "label": label, "labels": [label]})
        for a, b in zip(missing, missing[1:], strict=False):
            add("issue_new_labels", {**base, "labels": [a, b]})
        for login in issue["assignees"]:
            add("assigned", {**where, "assignee": login})
        for title in sorted(r["milestones"]):
            if title != issue["milestone"]:
                add("issue_milestone", {**base, "milestone": title})


def _branches(r: dict[str, Any], where: dict[str, Any], add: Any) -> None:
    names = sorted(r["branches"])
    for name in names:
        b = r["branches"][name]
        add("branch", {**where, "branch": name, "commit": b["commit"], "protected": b["protected"]})
        if name != r["default_branch"] and not b["protected"]:
            add("free_branch", {**where, "branch": name})
        if name not in r["protections"]:
            add("unprotected_branch", {**where, "branch": name, "branch_name": name})
        for path in sorted(r["files"].get(name, {})):
            add("file", {**where, "filepath": path, "ref": name, "branch": name})
        for other in names:
            if other != name:
                add("branch_pair", {**where, "head": name, "base": other})


def _search_words(state: dict[str, Any]) -> list[str]:
    words: set[str] = set()
    for r in state["repos"].values():
        words.add(r["name"].lower())
        words.update(w.lower() for w in re.findall(r"[A-Za-z]{4,}", r["description"]) if w.lower() not in STOP)
    return sorted(words)
