"""Nothing of the harness's environment reaches a sandboxed program, and no secret reaches the model (issue 27).

The ten planted secret shapes of the secrets test live in the harness's environment (and one in its argv,
an ``api_base`` password). A program reads every ``/proc/*/environ``, ``/proc/*/cmdline`` and file
descriptor it can see and, in code mode, pushes requests of its own down the SDK pipe; it also prints a
registered secret it assembled from pieces, which only redaction can stop. What the model endpoint
received (a local stub records it) and every file the run wrote hold none of them. Then code mode's
smaller points: peak memory recorded, a limit's own error type, and code_search's boundary.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import ScriptedClient
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.sandbox import Limits, Sandbox, bwrap_path
from surfbench.bench.sandbox.memcap import memory_cap
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.suites.suite_model import ExpectedCall, Task
from surfbench.surfaces import build_surface
from surfbench.surfaces.code import CodeSurface
from tests.bench.test_secrets import API_BASE_PASSWORD, DB_PASSWORD, KEY, PLANTED_ENV, leaks_in
from tests.fixtures.openai_stub import OpenAIStub, chat_reply, run_surfbench, stub_model_config, tool_call

needs_bwrap = pytest.mark.skipif(
    bwrap_path() is None, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
)
SECRETS = [KEY, *(v for k, v in PLANTED_ENV.items() if k != "DATABASE_URL"), DB_PASSWORD, API_BASE_PASSWORD]
PAT = PLANTED_ENV["GITHUB_PAT"]
CUT = len(PAT) // 2  # the probes hold a secret in two pieces only: their own text leaks nothing
CLEAN = {"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE", "PWD"}  # what the sandbox gives a command
SHELL = {"SHLVL", "_", "OLDPWD"}  # what bash adds for the commands it starts
CREDENTIAL = "KEY|PAT|TOKEN|PASS|AUTH|CRED|SECRET|URL"  # an attacker's filter of environment names

PROBE_SH = rf"""echo "assembled: {PAT[:CUT]}""{PAT[CUT:]}"
for p in /proc/[0-9]*; do
  echo "== $p environ names: $(tr '\0' '\n' < $p/environ | cut -d= -f1 | tr '\n' ' ')"
  tr '\0' '\n' < $p/environ | grep -E '{CREDENTIAL}'
  echo "cmdline: $(tr '\0' ' ' < $p/cmdline | cut -c1-200)"
  for f in $p/fd/*; do
    t=$(readlink $f); echo "fd $f -> $t"
    case "$t" in anon_inode*) continue ;; pipe*) [ $p = /proc/1 ] || continue ;; esac  # inherited: bwrap's
    timeout 1 head -c 200 "$f" < /dev/null | tr -d '\0' | tr '\n' ' '; echo
  done
done 2>&1 | head -c 3200"""

PROBE_PY = rf"""import json, os, re, sys
print("assembled:", "{PAT[:CUT]}" + "{PAT[CUT:]}")
issue = issue_create(owner="acme", repo="web", title="{PAT[:CUT]}" + "{PAT[CUT:]}")
print("reply:", "redacted" if "[redacted GITHUB_PAT]" in issue["title"] else "not redacted")
out = []
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    env = open(f"/proc/{{pid}}/environ", "rb").read().decode(errors="replace").split("\0")
    out.append(f"== /proc/{{pid}} environ names: " + " ".join(e.split("=")[0] for e in env if e))
    out += [e for e in env if re.search("{CREDENTIAL}", e.split("=")[0])]
    out.append("cmdline: " + open(f"/proc/{{pid}}/cmdline", "rb").read().decode(errors="replace")[:200])
    for fd in os.listdir(f"/proc/{{pid}}/fd"):
        try:
            target = os.readlink(f"/proc/{{pid}}/fd/{{fd}}")
            out.append(f"fd /proc/{{pid}}/fd/{{fd}} -> {{target}}")
            if not target.startswith("anon_inode"):
                at = os.open(f"/proc/{{pid}}/fd/{{fd}}", os.O_RDONLY | os.O_NONBLOCK)
                out.append(repr(os.read(at, 200)))
        except OSError as e:
            out.append(f"fd {{fd}}: {{e}}")
requests, replies = int(sys.argv[1]), int(sys.argv[2])
for fn in ("getenv", "environ", "__import__", "os_system"):
    os.write(requests, json.dumps({{"id": 9, "fn": fn, "args": ["GITHUB_PAT"], "kwargs": {{}}}}).encode() + b"\n")
    out.append("pipe: " + os.read(replies, 4000).decode(errors="replace"))
print("\n".join(out)[:12000])
"""


def probe_call(body: dict[str, Any]) -> dict[str, Any]:
    """The tool call that runs the probe on whatever surface the request shows."""
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    if "run_code" in tools:
        return tool_call("run_code", {"code": PROBE_PY})
    if "bash" in tools:  # bash, four
        return tool_call("bash", {"command": PROBE_SH})
    return tool_call("execute_code", {"steps": [{"code": PROBE_SH}]})  # unified, split


def respond(n: int, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    if body["messages"][-1]["role"] == "user":
        return 200, chat_reply(tool_calls=[probe_call(body)])
    return 200, chat_reply(content="Done.")


def probed(tmp_path: Path, *args: str) -> list[str]:
    """Run surfbench against the stub with the secrets planted; the probe's results the model received."""
    with OpenAIStub(respond) as stub:
        configs = stub_model_config(tmp_path, stub.api_base, extra="api_key_env: SURFBENCH_TEST_KEY\n")
        api_base = stub.api_base.replace("http://", f"http://user:{API_BASE_PASSWORD}@")
        env = {**PLANTED_ENV, "SURFBENCH_TEST_KEY": KEY}
        proc = run_surfbench(tmp_path, configs, *args, "limit=1", f"model.api_base={api_base}", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent = json.dumps([body for body, _ in stub.requests])
    assert not [s for s in SECRETS if s in sent], "a planted secret reached the model endpoint"
    leaks = leaks_in(
        [tmp_path / "results", tmp_path / "cache"], {"stdout": proc.stdout, "stderr": proc.stderr}, SECRETS
    )
    assert not leaks, f"planted secrets leaked: {leaks}"
    results = [m["content"] for body, _ in stub.requests for m in body["messages"] if m["role"] == "tool"]
    for result in results:  # the probe ran and saw each process, every one with the sandbox's clean environment
        names = dict(re.findall(r"^== /proc/(\d+) environ names: (.*)$", result, re.MULTILINE))
        assert set(names["1"].split()) == CLEAN - {"PWD"}, result[:3000]  # bubblewrap, the namespace's init
        seen = {name for line in names.values() for name in line.split()}
        assert seen <= CLEAN | SHELL, result[:3000]
        assert "cmdline: " in result and "fd /proc/" in result and "assembled: [redacted GITHUB_PAT]" in result
    return results


@needs_bwrap
def test_a_code_mode_program_reads_no_secret_through_proc_fds_or_the_pipe(tmp_path: Path):
    results = probed(tmp_path, "suite=forge", "surface=code")
    assert len(results) == 1
    assert "reply: redacted" in results[0]  # an SDK reply holding a secret is redacted before the program sees it
    assert results[0].count("is not in the SDK") == 4  # the forged pipe requests were refused


@needs_bwrap
def test_no_workspace_surface_lets_a_command_read_a_secret(tmp_path: Path):
    results = probed(tmp_path, "-m", "suite=workspace", "surface=bash,unified,split,four")
    assert len(results) == 4  # one probe per surface


# -- the sandbox itself ----------------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("quota", [0, 8])
def test_every_process_of_the_sandbox_starts_with_the_command_environment(quota: int, monkeypatch):
    for name, value in PLANTED_ENV.items():
        monkeypatch.setenv(name, value)
    box = Sandbox(Limits(disk_quota_bytes=quota << 20, memory_cap_bytes=256 << 20))
    try:
        if box.holder is not None:  # the idle process holding the disk, seen from the harness
            holder = Path(f"/proc/{box.holder.pid}/environ").read_bytes()
            assert not [s for s in SECRETS if s.encode() in holder]
        seen = box.run(["sh", "-c", "cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline | tr '\\0' '\\n'"])
    finally:
        box.close()
    assert seen.exit_code == 0 and "PATH=" in seen.stdout, seen
    assert not [s for s in SECRETS if s in seen.stdout]
    names = {line.split("=", 1)[0] for line in seen.stdout.splitlines() if re.match(r"^[A-Z_]+=", line)}
    assert names <= CLEAN, names


# -- code mode: peaks, limits, the search variant's boundary ---------------------------------------------

FORGE = load_suite("forge")
TASK = Task(
    id="t",
    turns=("Create a label 'ux' (#c5def5) in acme/web.",),
    expected=(ExpectedCall("label_create", {"owner": "acme", "repo": "web", "name": "ux", "color": "#c5def5"}),),
)
LABEL = 'label_create(owner="acme", repo="web", name="ux", color="#c5def5")'


def code_episode(script: list[Any], **params: Any) -> tuple[Any, Any]:
    surface = build_surface(FORGE.catalog, "code", {"timeout_s": 5, **params})
    trace = run_episode(
        TASK, surface.session(TASK.turns[0]), FORGE.new_backend(TASK), ScriptedClient(script), LoopSettings(),
        FORGE.system_prompt, lambda n: FORGE.catalog[n].parameters,
    )  # fmt: skip
    return trace, score_episode(TASK, trace, FORGE.catalog)


def run_code(code: str) -> list[tuple[str, Any]]:
    return [("run_code", {"code": code})]


@needs_bwrap
@pytest.mark.skipif(memory_cap().mechanism == "rlimit", reason="peak memory is measured by a memory cgroup")
def test_a_code_mode_episode_records_its_programs_peak_memory(tmp_path: Path):
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    cell = resolve_cell(CellSpec("forge", "code", "qwen2.5-coder-0.5b-instruct", tasks=("hot-issue-list-open",)))
    store.write_run_info({"cells": [{**cell.provenance(), "provider": "scripted"}]})
    hog = 'x = bytearray(40 * 1024 * 1024)\nprint(issue_list(owner="acme", repo="web"))'
    run_cell(cell, ModelPool(None), store, "oracle", client=ScriptedClient([run_code(hog), "Done."]))
    episodes = load_runs([tmp_path / "run"])
    assert len(episodes) == 1 and episodes["memory_peak_bytes"].iloc[0] >= 40 * 1024 * 1024


FILL = "with open({where!r}, 'wb') as f:\n    while True:\n        f.write(b'x' * 65536)\n"
CAUGHT = (
    "try:\n"
    + "".join(f"    {line}\n" for line in FILL.splitlines())
    + "except OSError as e:\n    print('refused:', e)\n"
)


@needs_bwrap
def test_a_program_that_fills_its_scratch_quota_records_disk_quota_exceeded():
    # it catches the refused write and finishes: the quota is still why it is not clean (was code_exception)
    trace, score = code_episode([run_code(CAUGHT.format(where="big") + LABEL), "Done."], scratch_mb=4)
    program = trace.calls[-1]
    assert "refused: [Errno 28] No space left on device" in program.result and "[disk quota:" in program.result
    assert program.error_type == "disk_quota_exceeded" and score.success  # its call still counts
    assert "disk_quota_exceeded" in CodeSurface.error_types
    for where in ("big", "/tmp/big"):  # raised: the working directory or /tmp, each under the quota
        raised = code_episode([run_code(FILL.format(where=where)), "Done."], scratch_mb=4)[0].calls[-1]
        assert raised.error_type == "disk_quota_exceeded" and "No space left on device" in raised.result, where


def search_then(code: str) -> str:
    return f'print(search_api("create a label"))\n{code}'


@needs_bwrap
def test_code_search_calls_only_what_search_api_returned():
    trace, score = code_episode([run_code(f"{LABEL}\nprint('not reached')"), "Done."], sdk="search")
    refused, program = trace.calls[0], trace.calls[-1]
    assert (refused.kind, refused.error_type, refused.operation) == ("rejected", "not_loaded", "label_create")
    assert "has not been found yet: call search_api(query)" in program.result and "not reached" not in program.result
    assert not [c for c in trace.calls if c.kind == "operation"] and score.protocol_violations == 1
    # found by search_api: callable in the same program, and in the episode's later programs
    trace, score = code_episode([run_code(search_then("x = 1")), run_code(LABEL), "Done."], sdk="search")
    assert [c.operation for c in trace.calls if c.kind == "operation"] == ["label_create"] and score.success
    assert score.protocol_violations == 0
    # the other variants list every function: no search needed
    trace, score = code_episode([run_code(LABEL), "Done."], sdk="index")
    assert score.success and score.protocol_violations == 0
