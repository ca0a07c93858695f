"""API keys never reach results, transcripts, the response cache or the logs.

A hosted provider is stood in for by a local OpenAI-compatible stub that checks the key it is sent and,
like real providers do, quotes it back in an error message once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from surfbench.bench.base import secrets
from surfbench.bench.store.results import load_runs
from tests.conftest import ROOT
from tests.fixtures.openai_stub import OpenAIStub, chat_reply, run_surfbench, stub_model_config, tool_call

KEY = "sk-planted-7f3c9e1d2b4a6f8e0c1d3b5a7e9f1c3d"


def respond(n: int, body: dict, headers: dict) -> tuple[int, dict]:
    if n == 1:  # providers quote the key back when they refuse it
        return 500, {"error": {"message": f"Internal error for key {KEY}; try again", "type": "server"}}
    if body["messages"][-1]["role"] == "user":
        return 200, chat_reply(tool_calls=[tool_call("forge", {"operation": "issue_get", "args": {"api_key": KEY}})])
    return 200, chat_reply(content="Done.")


def test_a_planted_api_key_appears_in_no_output(tmp_path: Path):
    with OpenAIStub(respond) as stub:
        configs = stub_model_config(tmp_path, stub.api_base, extra="api_key_env: SURFBENCH_TEST_KEY\n")
        proc = run_surfbench(
            tmp_path, configs, "suite=forge", "surface=dispatcher", "limit=2", env={"SURFBENCH_TEST_KEY": KEY}
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen_keys = [headers.get("authorization") for _, headers in stub.requests]
    assert seen_keys and all(h == f"Bearer {KEY}" for h in seen_keys), "the key was not used"
    assert len(load_runs([tmp_path / "results" / "x"])) == 2
    written = [p for p in tmp_path.rglob("*") if p.is_file() and configs not in p.parents]
    assert any(p.suffix == ".jsonl" for p in written) and any("cache" in p.parts for p in written)
    leaks = [str(p) for p in written if KEY.encode() in p.read_bytes()]
    leaks += [name for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)) if KEY in text]
    assert not leaks, f"the API key leaked into {leaks}"


# ------------------------------------------------------------------------------------------------------
# Credentials by value, wherever they come from (issue 13): the environment under every credential
# name, URL userinfo, overrides, the prompt, and model output that echoes them.

PLANTED_ENV = {
    "AWS_SECRET_ACCESS_KEY": "aws-planted-wJalrXUtnFEMI-K7MDENG",  # SECRET, KEY
    "GITHUB_PAT": "ghp_planted0123456789abcdefABCDEF",  # PAT
    "MY_SERVICE_TOKEN": "tok-planted-5e6f7a8b9c",  # TOKEN
    "REDIS_PASSWORD": "redis-planted-hunter2",  # PASSWORD
    "FTP_PASS": "ftp-planted-pass-77",  # PASS
    "BASIC_AUTH": "auth-planted-b64Zm9v",  # AUTH
    "GCP_CREDENTIAL": "cred-planted-8d7c6b5a",  # CREDENTIAL
    "SHORT_API_KEY": "k7Qz9xW",  # 7 characters
    "DATABASE_URL": "postgres://app:db-planted-pw-31337@db.internal:5432/app",  # a password in a URL
}
DB_PASSWORD = "db-planted-pw-31337"
API_BASE_PASSWORD = "sk-test-PLANTED123"  # model.api_base=http://user:PASSWORD@127.0.0.1:PORT/v1
PROMPT_PASSWORD = "prompt-planted-pw-9191"  # a URL with userinfo in the task's prompt, registered nowhere
OUTPUT_PASSWORD = "echo-planted-pw-4242"  # a URL with userinfo the model writes, registered nowhere
PLANTED = [
    KEY, *(v for k, v in PLANTED_ENV.items() if k != "DATABASE_URL"), DB_PASSWORD, API_BASE_PASSWORD,
    PROMPT_PASSWORD, OUTPUT_PASSWORD,
]  # fmt: skip
PROMPT = (
    f"My deploy token is {PLANTED_ENV['GITHUB_PAT']}; the mirror is "
    f"https://deploy:{PROMPT_PASSWORD}@git.example.com/acme/web.git. What is issue #3 in acme/web about?"
)


def echo_everything(n: int, body: dict, headers: dict) -> tuple[int, dict]:
    """A provider that quotes every secret back: in an error, in tool arguments, in its answer."""
    every = " ".join([*PLANTED[:-2], f"https://bob:{OUTPUT_PASSWORD}@mirror.example/x"])
    if n == 1:
        return 500, {"error": {"message": f"Internal error for {every}; try again", "type": "server"}}
    if body["messages"][-1]["role"] == "user":
        args = {"owner": "acme", "repo": "web", "index": 3, "note": every}
        return 200, chat_reply(tool_calls=[tool_call("forge", {"operation": "issue_get", "args": args})])
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return 200, chat_reply(content=f"Done. You said: {prompt} Also: {every}")


def planted_suite(tmp_path: Path, configs: Path) -> Path:
    """The forge suite with one task whose prompt carries a token and a URL password; returns its root."""
    folder = tmp_path / "suites" / "planted"
    shutil.copytree(ROOT / "tasks" / "forge", folder)
    suite = (folder / "suite.yaml").read_text().replace("name: forge", "name: planted")
    (folder / "suite.yaml").write_text(suite)
    task = {
        "id": "planted-prompt",
        "split": "dev",
        "turns": [PROMPT],
        "expected": [{"op": "issue_get", "args": {"owner": "acme", "repo": "web", "index": 3}}],
    }
    (folder / "tasks.yaml").write_text(yaml.safe_dump([task]))
    (configs / "suite" / "planted.yaml").write_text("name: planted\n")
    return folder.parent


def leaks_in(folders: list[Path], texts: dict[str, str], secrets: list[str]) -> list[str]:
    """Where any of ``secrets`` appears: file contents and names under ``folders``, and ``texts``."""
    found = []
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            data = path.read_bytes() if path.is_file() else b""
            found += [f"{path}: {s}" for s in secrets if s.encode() in data or s in str(path)]
    found += [f"{name}: {s}" for name, text in texts.items() for s in secrets if s in text]
    return found


def test_ten_planted_secret_shapes_appear_in_no_file_a_run_writes(tmp_path: Path):
    tmp = tmp_path / "tmp"  # the system temp folder of the run: Hydra's folders go there, then away
    tmp.mkdir()
    with OpenAIStub(echo_everything) as stub:
        configs = stub_model_config(tmp_path, stub.api_base, extra="api_key_env: SURFBENCH_TEST_KEY\n")
        suites = planted_suite(tmp_path, configs)
        api_base = stub.api_base.replace("http://", f"http://user:{API_BASE_PASSWORD}@")
        env = {**PLANTED_ENV, "SURFBENCH_TEST_KEY": KEY, "SURFBENCH_SUITES": str(suites), "TMPDIR": str(tmp)}
        proc = run_surfbench(
            tmp_path, configs, "suite=planted", "surface=dispatcher", f"model.api_base={api_base}", env=env
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent = json.dumps([body for body, _ in stub.requests])
    assert PROMPT_PASSWORD in sent and PLANTED_ENV["GITHUB_PAT"] in sent, "the prompt did not carry its secrets"
    assert all(h.get("authorization", "").startswith("Basic ") for _, h in stub.requests), "api_base not used"
    results, cache = tmp_path / "results", tmp_path / "cache"
    assert sorted(p.name for p in results.iterdir()) == ["x"], "only the run folder (no .hydra)"
    assert len(load_runs([results / "x"])) == 1
    assert any(cache.rglob("*.json")), "the response cache was written"
    transcript = "".join(p.read_text() for p in (results / "x").rglob("*.jsonl"))
    assert "[redacted GITHUB_PAT]" in transcript and "[redacted url password]" in transcript
    assert "[redacted SHORT_API_KEY]" in transcript and "[redacted DATABASE_URL password]" in transcript
    assert not list(tmp.glob("surfbench-*")), "Hydra's temporary folder is left behind"
    leaks = leaks_in([results, cache, tmp], {"stdout": proc.stdout, "stderr": proc.stderr}, PLANTED)
    assert not leaks, f"planted secrets leaked: {leaks}"


def test_a_sweep_keeps_its_overrides_out_of_results_and_off_the_console(tmp_path: Path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # an endpoint of its own (the password reaches the stub as basic auth): a provider that reads api_base, since
    # one that does not (the scripted oracle) refuses the override (bench.models.provider_settings)
    with OpenAIStub(lambda n, body, headers: (200, chat_reply(content="Done."))) as stub:
        configs = stub_model_config(tmp_path, stub.api_base)
        api_base = stub.api_base.replace("http://", f"http://user:{API_BASE_PASSWORD}@")
        proc = subprocess.run(
            [
                sys.executable, "-m", "surfbench", "run", "-m", "surface=full,dispatcher", "model=stub", "suite=forge",
                "limit=1", f"model.api_base={api_base}", f"results_dir={tmp_path / 'results'}", "run=s",
            ],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
            env={**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true", "TMPDIR": str(tmp),
                 "SURFBENCH_CACHE": str(tmp_path / "cache")},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stub.requests and all(h.get("authorization", "").startswith("Basic ") for _, h in stub.requests)
    output = proc.stdout + proc.stderr
    assert "Launching 2 jobs" in output and "[redacted model.api_base password]" in output
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["s"]
    assert not list(tmp.glob("surfbench-*"))
    leaks = leaks_in([tmp_path / "results", tmp], {"stdout": proc.stdout, "stderr": proc.stderr}, [API_BASE_PASSWORD])
    assert not leaks, f"the api_base password leaked: {leaks}"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("AWS_ACCESS_KEY_ID", True), ("GITHUB_PAT", True),
        ("MY_SERVICE_TOKEN", True), ("HF_TOKEN", True), ("REDIS_PASSWORD", True), ("DBPASSWORD", True),
        ("FTP_PASS", True), ("BASIC_AUTH", True), ("GCP_CREDENTIAL", True), ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("model.api_key", True), ("backend_options.authToken", True), ("apiKey", True), ("CLIENT_SECRET", True),
        ("PATH", False), ("PYTHONPATH", False), ("LD_LIBRARY_PATH", False), ("PASSTHROUGH", False),
        ("TOKENIZERS_PARALLELISM", False), ("KEYBOARD", False), ("PWD", False), ("OLDPWD", False),
        ("MAX_TOKENS", False), ("model.api_key_env", False), ("SSH_AUTH_SOCK", False), ("HF_TOKEN_PATH", False),
        ("DATABASE_URL", False), ("HOME", False),
    ],
)  # fmt: skip
def test_credential_names_are_matched_by_part_not_by_substring(name: str, secret: bool):
    # PATH contains PAT, PASSTHROUGH PASS, TOKENIZERS_PARALLELISM TOKEN (its value "false" would be
    # redacted everywhere): none has a part that is a credential word. A last part saying the value is
    # about a credential (a variable name, a path, a socket) is not one either.
    assert secrets.is_credential_name(name) is secret


def test_the_environment_is_redacted_by_value_but_not_common_or_short_values(monkeypatch):
    monkeypatch.setattr(secrets, "_SECRETS", {})
    secrets.register_environment(
        {
            "SHORT_API_KEY": "k7Qz9xW", "TINY_TOKEN": "abc", "USE_AUTH": "true", "OTP_PASS": "3600",
            "PIN_PASS": "12345678", "PATH": "/usr/local/bin:/usr/bin", "TOKENIZERS_PARALLELISM": "false",
            "DATABASE_URL": "postgres://app:db%40pw-9@db/app", "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
        }
    )  # fmt: skip
    text = 'k7Qz9xW abc true 3600 12345678 /usr/local/bin:/usr/bin false db@pw-9 /tmp/ssh-x/agent.1 {"a": true}'
    assert secrets.redact(text) == (
        "[redacted SHORT_API_KEY] abc true 3600 [redacted PIN_PASS] /usr/local/bin:/usr/bin false "
        '[redacted DATABASE_URL password] /tmp/ssh-x/agent.1 {"a": true}'
    )


def test_url_passwords_are_redacted_anywhere_and_overrides_by_key(monkeypatch):
    monkeypatch.setattr(secrets, "_SECRETS", {})
    secrets.register_overrides(["+backend_options.auth_token='s3cr3t-value'", "model.max_tokens=2048", "limit=5"])
    text = (
        "clone https://alice:hunter22@git.example/x.git or ssh://git@host/x; token s3cr3t-value, "
        'json {"url": "http://u:p4ss@h:1/v1"} 2048 5'
    )
    assert secrets.redact(text) == (
        "clone https://alice:[redacted url password]@git.example/x.git or ssh://git@host/x; token "
        '[redacted backend_options.auth_token], json {"url": "http://u:[redacted url password]@h:1/v1"} 2048 5'
    )
    big = "a" * 1_000_000 + "://" + "b" * 1_000_000  # linear: no backtracking blow-up on long words
    assert secrets.redact(big) == big


# ------------------------------------------------------------------------------------------------------
# Round four (issue 49): the plain progress line, and a password in a model config file's api_base.

FILE_PASSWORD = "cfg-planted-pw-5150"  # in configs/model/stub.yaml's api_base, given nowhere else


def always_5xx(n: int, body: dict, headers: dict) -> tuple[int, dict]:
    return 503, {"error": {"message": "upstream unavailable", "type": "server"}}


def test_the_plain_progress_line_does_not_print_an_api_base_password(tmp_path: Path):
    """An endpoint that keeps answering 5xx ends the episode with a harness error naming the model's address;
    `progress=plain` printed it with the password in it (the stored rows were redacted)."""
    with OpenAIStub(always_5xx) as stub:
        configs = stub_model_config(tmp_path, stub.api_base)
        api_base = stub.api_base.replace("http://", f"http://user:{API_BASE_PASSWORD}@")
        proc = run_surfbench(
            tmp_path, configs, "suite=forge", "surface=core", "limit=1", "progress=plain",
            f"model.api_base={api_base}",
        )  # fmt: skip
    assert stub.requests, "the endpoint was not called"
    assert "harness error" in proc.stderr, proc.stderr[-3000:]
    assert API_BASE_PASSWORD not in proc.stderr + proc.stdout
    assert "[redacted" in proc.stderr


def test_a_password_in_a_model_config_files_api_base_is_a_secret(tmp_path: Path):
    """The password inside a config file's api_base was never registered: when the model echoed it, it landed in the
    transcript, the tables, the response cache and exported viewer pages. Given as an override it was redacted."""

    def echo_address(n: int, body: dict, headers: dict) -> tuple[int, dict]:
        said = f"the endpoint's password is {FILE_PASSWORD}"  # alone: no URL around it to give it away
        if body["messages"][-1]["role"] == "user":
            args = {"owner": "acme", "repo": "web", "index": 3, "note": said}
            return 200, chat_reply(tool_calls=[tool_call("issue_get", args)])
        return 200, chat_reply(content=f"Done. {said}")

    with OpenAIStub(echo_address) as stub:
        api_base = stub.api_base.replace("http://", f"http://user:{FILE_PASSWORD}@")
        configs = stub_model_config(tmp_path, api_base)
        proc = run_surfbench(tmp_path, configs, "suite=forge", "surface=full", "limit=1", "progress=plain")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert all(h.get("authorization", "").startswith("Basic ") for _, h in stub.requests), "api_base not used"
        exported = tmp_path / "exported"
        view = subprocess.run(
            [sys.executable, "-m", "surfbench", "view", str(tmp_path / "results" / "x"), "--export", str(exported)],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
            env={**os.environ, "SURFBENCH_CONFIGS": str(configs), "SURFBENCH_CACHE": str(tmp_path / "cache")},
        )  # fmt: skip
    assert view.returncode == 0, view.stderr[-2000:]
    results, cache = tmp_path / "results", tmp_path / "cache"
    assert any(cache.rglob("*.json")) and any(exported.rglob("*.html"))
    transcript = "".join(p.read_text() for p in (results / "x").rglob("*.jsonl"))
    assert "[redacted" in transcript, "the echo did not reach the transcript"
    leaks = leaks_in(
        [results, cache, exported], {"stdout": proc.stdout + view.stdout, "stderr": proc.stderr}, [FILE_PASSWORD]
    )
    assert not leaks, f"the config file's api_base password leaked: {leaks}"


def test_a_model_config_made_in_python_registers_its_api_base_password(monkeypatch):
    """A ModelConfig built without a config file (the Python API) reaches the client without model_config():
    its api_base password must be a secret as soon as the client is made, like its API key."""
    from surfbench.bench.models import ModelPool
    from surfbench.bench.models.spec import ModelConfig

    monkeypatch.setattr(secrets, "_SECRETS", {})
    cfg = ModelConfig(name="mine", provider="litellm", model="openai/fake", api_base="http://me:pw-in-code-77@h/v1")
    ModelPool(None).client(cfg)
    assert secrets.redact("it said pw-in-code-77") == "it said [redacted model.api_base password]"
