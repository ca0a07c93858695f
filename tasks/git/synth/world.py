"""The git suite's world for ``surfbench synth``: named pools read from the fixture repository itself.

``pools(state)`` gets a fresh working copy's state (state.py: branch, branches, staged, unstaged and
untracked files) and reads the rest with git from the fixture (fixture.py builds it the same way
everywhere): every commit of every branch (its short sha, its place as ``HEAD~N`` on main, author,
date, message and the files it changed), the tags, the files at each ref, and date windows that
hold some commits and not others. Every bundle carries ``repo_path: "."``, as the system prompt asks.
"""

from __future__ import annotations

from typing import Any

from surfbench.tasks.git.fixture import _cached, git

NEW_BRANCHES = ["bugfix/typo", "docs/readme", "experiment", "feature/farewell", "release/0.3", "spike/cli",
                "hotfix/version", "chore/cleanup"]  # fmt: skip
MESSAGES = ["Add farewell helper", "Update the changelog", "Prepare release 0.3.0", "Add TODO list",
            "Say goodbye on exit", "Work in progress", "Tidy up the greeter", "Record pending changes"]  # fmt: skip
HERE = {"repo_path": "."}


def _commits(repo: Any) -> list[dict[str, Any]]:
    out = []
    main = git(repo, "rev-list", "main").split()
    for line in git(repo, "log", "--all", "--format=%H|%h|%an|%ad|%s", "--date=short").splitlines():
        full, short, author, date, subject = line.split("|", 4)
        files = [f for f in git(repo, "show", "--name-only", "--format=", full).splitlines() if f]
        out.append({**HERE, "sha": short, "full_sha": full, "author": author, "date": date, "message": subject,
                    "file": files[0], "files": files, "back": main.index(full) if full in main else None})  # fmt: skip
    return out


def pools(state: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    repo = _cached()
    commits = _commits(repo)
    out: dict[str, list[dict[str, Any]]] = {"here": [dict(HERE)]}
    current = state.get("branch") or "main"
    tags = [t for t in git(repo, "tag").split() if t]
    branches = sorted(state.get("branches") or [])
    out["commit"] = commits
    out["revision"] = [{**c, "revision": c["sha"]} for c in commits]
    out["revision"] += [{**c, "revision": f"HEAD~{c['back']}"} for c in commits if c["back"]]
    out["revision"] += [{**c, "revision": t} for t in tags for c in commits if git(repo, "rev-parse", "--short",
                        t).strip() == c["sha"]]  # fmt: skip
    out["target"] = [
        {**HERE, "target": r["revision"], "sha": r["sha"], "message": r["message"]} for r in out["revision"]
    ]
    out["target"] += [{**HERE, "target": b} for b in branches if b != current]
    out["ref"] = [{**HERE, "ref": name} for name in [*branches, *tags]]
    out["branch"] = [{**HERE, "branch": b, "tip": state.get("branch_tips", {}).get(b)} for b in branches]
    out["other_branch"] = [{**HERE, "branch_name": b} for b in branches if b != current]
    out["checkout_target"] = out["other_branch"] + [{**HERE, "branch_name": t} for t in tags]
    out["new_branch"] = [{**HERE, "new": name} for name in NEW_BRANCHES]
    out["new_branch_from"] = [
        {**HERE, "new": name, "base": base} for name in NEW_BRANCHES for base in [*branches, *tags]
    ]
    out["message"] = [{**HERE, "message": m} for m in MESSAGES]
    files: dict[str, list[str]] = {}
    for ref in [*branches, *tags]:
        for path in git(repo, "ls-tree", "-r", "--name-only", ref).splitlines():
            files.setdefault(path, []).append(ref)
    out["file_at"] = [{**HERE, "revision": f"{ref}:{path}", "path": path, "at": ref}
                      for path, refs in sorted(files.items()) for ref in refs]  # fmt: skip
    pending = sorted(set(state.get("unstaged") or []) | set(state.get("untracked") or []))
    out["addable"] = [{**HERE, "files": [f], "file": f} for f in pending]
    if len(pending) > 1:
        out["addable"].append({**HERE, "files": pending, "file": pending[0]})
    out["add_commit"] = [{**a, "message": m} for a in out["addable"] for m in MESSAGES]
    out["context"] = [{**HERE, "context_lines": n} for n in (0, 2, 5, 10)]
    out["count"] = [{**HERE, "max_count": n} for n in (2, 3, 4, 5)]
    dates = sorted({c["date"] for c in commits})
    out["since"] = [{**HERE, "start_timestamp": d} for d in dates[1:]]
    out["window"] = [{**HERE, "start_timestamp": a, "end_timestamp": b} for a, b in zip(dates, dates[2:], strict=False)]
    out["contains"] = [{**HERE, "contains": r["revision"]} for r in out["revision"]]
    out["not_contains"] = [{**HERE, "not_contains": r["revision"]} for r in out["revision"]]
    return out
