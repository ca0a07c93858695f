"""A secret found once is redacted wherever it appears later, and a killed run leaves none behind (issue 27).

A password a task turn gives inside a URL must not reach any file when the model repeats it alone; a
sweep killed with SIGKILL must leave no override in the temporary directory, and the next run removes
the folders the dead one left (never a live run's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import yaml

from surfbench.bench.base import secrets
from surfbench.bench.cli import tempdirs
from surfbench.bench.store.results import load_runs
from tests.conftest import ROOT
from tests.fixtures.openai_stub import OpenAIStub, chat_reply, run_surfbench, stub_model_config, tool_call

TASK_PASSWORD = "taskpw-Planted-5150"
TURN = f"Connect with https://taskuser:{TASK_PASSWORD}@db.example.com/x and show me issue #3 in acme/web."
SWEEP_PASSWORD = "sweep-planted-pw-8080"


def leaks(folders: list[Path], texts: dict[str, str], secret: str) -> list[str]:
    """Every file under ``folders`` and every text of ``texts`` holding ``secret``."""
    found = [str(p) for f in folders for p in f.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    return found + [name for name, text in texts.items() if secret in text]


def url_password_suite(tmp_path: Path, configs: Path) -> Path:
    """The forge suite with one task whose turn holds a URL with a password; returns the suites root."""
    folder = tmp_path / "suites" / "urlpw"
    shutil.copytree(ROOT / "tasks" / "forge", folder)
    (folder / "suite.yaml").write_text((folder / "suite.yaml").read_text().replace("name: forge", "name: urlpw"))
    task = {
        "id": "url-password",
        "split": "dev",
        "turns": [TURN],
        "expected": [{"op": "issue_get", "args": {"owner": "acme", "repo": "web", "index": 3}}],
    }
    (folder / "tasks.yaml").write_text(yaml.safe_dump([task]))
    (configs / "suite" / "urlpw.yaml").write_text("name: urlpw\n")
    return folder.parent


def echo_bare_password(n: int, body: dict, headers: dict) -> tuple[int, dict]:
    """A model that repeats the turn's password alone: in its first answer, in a tool argument, at the end."""
    if body["messages"][-1]["role"] == "user":
        args = {"owner": "acme", "repo": "web", "index": 3, "note": TASK_PASSWORD}
        call = tool_call("forge", {"operation": "issue_get", "args": args})
        return 200, chat_reply(content=f"Using password {TASK_PASSWORD}.", tool_calls=[call])
    return 200, chat_reply(content=f"Done; the password was {TASK_PASSWORD}.")


def test_a_turn_password_echoed_alone_by_the_model_appears_in_no_file(tmp_path: Path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with OpenAIStub(echo_bare_password) as stub:
        configs = stub_model_config(tmp_path, stub.api_base)
        suites = url_password_suite(tmp_path, configs)
        env = {"SURFBENCH_SUITES": str(suites), "TMPDIR": str(tmp)}
        proc = run_surfbench(tmp_path, configs, "suite=urlpw", "surface=dispatcher", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(stub.requests) >= 2, "the model was not asked twice"
    assert len(load_runs([tmp_path / "results" / "x"])) == 1
    cache = tmp_path / "cache"
    assert any(cache.rglob("*.json")), "the response cache was written"
    transcript = "".join(p.read_text() for p in (tmp_path / "results").rglob("*.jsonl"))
    assert "Using password [redacted url password]." in transcript, "the echo was not recorded, redacted"
    found = leaks([tmp_path / "results", cache, tmp], {"stdout": proc.stdout, "stderr": proc.stderr}, TASK_PASSWORD)
    assert not found, f"the task's password leaked into {found}"


def test_a_url_password_seen_once_is_redacted_alone_later_but_not_a_placeholder(monkeypatch):
    monkeypatch.setattr(secrets, "_SECRETS", {})
    # model output: the URL first, the bare password in a later text
    assert secrets.redact("try postgres://app:s3cret-Planted-77@db/x") == (
        "try postgres://app:[redacted url password]@db/x"
    )
    assert secrets.redact('{"pw": "s3cret-Planted-77"} s3cret-Planted-77') == (
        '{"pw": "[redacted url password]"} [redacted url password]'
    )
    # in one text, the bare password before its URL
    assert secrets.redact("pw Other-Planted-42 at https://u:Other-Planted-42@h/") == (
        "pw [redacted url password] at https://u:[redacted url password]@h/"
    )
    # an example URL's placeholder or short password is redacted in its URL only: "pytest" stays whole
    text = "see http://user:password@localhost, http://u:test@h, http://u:****@h and http://u:ab12c@h"
    assert "password" not in secrets.redact(text).replace("[redacted url password]", "")
    assert secrets.redact("pytest: the password field, **** and ab12c") == "pytest: the password field, **** and ab12c"


def test_a_killed_sweep_leaves_no_password_and_the_next_run_removes_its_folders(tmp_path: Path):
    tmp = tmp_path / "tmp"  # the runs' temporary directory
    tmp.mkdir()
    asked, release = threading.Event(), threading.Event()

    def block_first(n: int, body: dict, headers: dict) -> tuple[int, dict]:
        if n == 1:  # the sweep is mid-run: it waits for this answer until it is killed
            asked.set()
            release.wait(120)
        return 200, chat_reply(content="Done.")

    with OpenAIStub(block_first) as stub:
        configs = stub_model_config(tmp_path, stub.api_base)
        api_base = stub.api_base.replace("http://", f"http://user:{SWEEP_PASSWORD}@")
        environ = {
            **os.environ, "SURFBENCH_CONFIGS": str(configs), "SURFBENCH_CACHE": str(tmp_path / "cache"), "CI": "true",
            "TMPDIR": str(tmp),
        }  # fmt: skip
        with (tmp_path / "killed.log").open("w") as log:
            sweep = subprocess.Popen(
                [
                    sys.executable, "-m", "surfbench", "run", "-m", "surface=dispatcher,full", "model=stub", "limit=1",
                    f"model.api_base={api_base}", f"results_dir={tmp_path / 'results'}", "run=k",
                ],
                cwd=ROOT, env=environ, stdout=log, stderr=log,
            )  # fmt: skip
            try:
                while not asked.wait(0.2):
                    assert sweep.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
            finally:
                sweep.kill()  # SIGKILL: no handler, no finally, no cleanup
                sweep.wait()
        release.set()
        assert stub.requests[0][1].get("authorization", "").startswith("Basic "), "api_base was not used"
        left = sorted(p.name for p in tmp.iterdir())
        assert [n.split("-")[1] for n in left] == ["failures", "hydra"], f"the killed sweep left {left}"
        found = leaks([tmp], {"log": (tmp_path / "killed.log").read_text()}, SWEEP_PASSWORD)
        assert not found, f"the sweep's api_base password was left in {found}"

        # a live process's folder (this test's) stays; one named for a reused pid (this pid, another
        # start time) and the killed sweep's go
        live = tempdirs.owned_tempdir("surfbench-hydra-", root=tmp)
        parts = live.name.split("-")
        reused = tmp / "-".join([*parts[:4], str(int(parts[4]) + 1), "reused"])
        reused.mkdir()
        proc = run_surfbench(tmp_path, configs, "surface=dispatcher", "limit=1", env={"TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in tmp.iterdir()) == [live.name], "stale folders left, or a live one removed"
    assert json.loads((tmp_path / "results" / "x" / "run.json").read_text())["cells"], "the second run ran"
