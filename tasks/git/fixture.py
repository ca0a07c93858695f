"""The git suite's fixture repository, built per working copy (a ``.git`` cannot be committed in a folder).

``build_repo(workdir)`` is the server's ``setup`` hook (suite.yaml ``catalog.mcp.setup``). The repository
is built once per process in a cache folder, with fixed names, emails and dates and no global or system
git config, so every machine gets the same commit hashes; each working copy is a plain copy of it.

History (main)::

    c1 2026-01-05 Alice Archer  Initial commit            README.md, src/app.py, src/version.py
    c2 2026-01-12 Bob Baker     Add greeting helper       src/greet.py, src/app.py
    c3 2026-02-03 Alice Archer  Add changelog             CHANGELOG.md            (tag v0.1.0)
    c4 2026-02-20 Bob Baker     Fix typo in README        README.md               (origin/main)
    c5 2026-03-02 Carol Chen    Bump version to 0.2.0     src/version.py          (main, HEAD)

``feature/login`` branches from c3 with one commit (2026-02-10, Carol Chen, "Add login form": src/login.py).
The working tree then has staged changes (CHANGELOG.md modified, src/farewell.py added), an unstaged one
(src/app.py) and an untracked file (TODO.txt); none of them conflicts with checking out feature/login.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

USER = ("Surfbench Agent", "agent@example.com")
"""Who the server's commits are by (the repository's own config; the server reads no other)."""

FILES_C1 = {
    "README.md": "# tinyapp\n\nA tiny greeter aplication.\n",
    "src/app.py": 'from version import VERSION\n\n\ndef main():\n    print("tinyapp", VERSION)\n',
    "src/version.py": 'VERSION = "0.1.0"\n',
}
APP_C2 = (
    "from greet import greet\nfrom version import VERSION\n\n\n"
    'def main():\n    print("tinyapp", VERSION)\n    print(greet("world"))\n'
)
CHANGELOG = "# Changelog\n\n## 0.1.0\n- First release\n"
README_C4 = "# tinyapp\n\nA tiny greeter application.\n"
HISTORY: list[tuple[str, str, str, dict[str, str]]] = [
    ("2026-01-05T10:00:00+0000", "Alice Archer", "Initial commit", FILES_C1),
    (
        "2026-01-12T09:30:00+0000",
        "Bob Baker",
        "Add greeting helper",
        {"src/greet.py": 'def greet(name):\n    return f"Hello, {name}!"\n', "src/app.py": APP_C2},
    ),
    ("2026-02-03T14:15:00+0000", "Alice Archer", "Add changelog", {"CHANGELOG.md": CHANGELOG}),
    ("2026-02-20T16:45:00+0000", "Bob Baker", "Fix typo in README", {"README.md": README_C4}),
    ("2026-03-02T11:00:00+0000", "Carol Chen", "Bump version to 0.2.0", {"src/version.py": 'VERSION = "0.2.0"\n'}),
]
LOGIN = (
    "2026-02-10T08:20:00+0000",
    "Carol Chen",
    "Add login form",
    {"src/login.py": "def login(user, password):\n    return bool(user and password)\n"},
)
STAGED = {
    "CHANGELOG.md": "# Changelog\n\n## Unreleased\n- Add farewell helper\n\n## 0.1.0\n- First release\n",
    "src/farewell.py": 'def farewell(name):\n    return f"Goodbye, {name}!"\n',
}
UNSTAGED = {"src/app.py": APP_C2 + '    print("bye")\n'}
UNTRACKED = {"TODO.txt": "- add a --name option\n"}

_lock = threading.Lock()
_built: Path | None = None


def git_env() -> dict[str, str]:
    """The environment every git command of the suite runs with: no global or system config, fixed TZ."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "TZ": "UTC", "LC_ALL": "C"}
    return env


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``repo``; its stdout (a failure raises with git's message)."""
    done = subprocess.run(["git", *args], cwd=repo, env=env or git_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _commit(repo: Path, date: str, author: str, message: str, files: dict[str, str]) -> None:
    _write(repo, files)
    git(repo, "add", "--", *files)
    email = f"{author.split()[0].lower()}@example.com"
    env = git_env() | {
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": author,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_COMMITTER_DATE": date,
    }
    git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message, env=env)


def build_into(repo: Path) -> None:
    """Build the fixture repository in the empty (or absent) folder ``repo``."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", USER[0])
    git(repo, "config", "user.email", USER[1])
    for i, (date, author, message, files) in enumerate(HISTORY):
        _commit(repo, date, author, message, files)
        if i == 2:
            git(repo, "tag", "v0.1.0")
            git(repo, "branch", "feature/login")
            git(repo, "checkout", "-q", "feature/login")
            _commit(repo, *LOGIN)
            git(repo, "checkout", "-q", "main")
        if i == 3:
            git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    _write(repo, STAGED)
    git(repo, "add", "--", *STAGED)
    _write(repo, UNSTAGED)
    _write(repo, UNTRACKED)


def _cached() -> Path:
    """The repository built once per process (removed at exit)."""
    global _built
    with _lock:
        if _built is None or not (_built / ".git").is_dir():
            root = Path(tempfile.mkdtemp(prefix="surfbench-git-fixture-"))
            atexit.register(shutil.rmtree, root, True)
            build_into(root / "repo")
            _built = root / "repo"
        return _built


def build_repo(workdir: Path) -> None:
    """The setup hook: the fixture repository copied into the fresh working copy ``workdir``."""
    shutil.copytree(_cached(), workdir, symlinks=True, dirs_exist_ok=True)
