"""``surfbench view``: the pages a user reads, the read-only server, and the static export (issue 33).

Over the committed forge reference run of the 0.5B model (6 cells x 45 tasks, a real model's episodes): the
dispatcher routes ``forge`` calls to operations there, and its checks fail for recorded reasons. The browser test
(tests/bench/test_viewer_browser.py) drives the same pages in Chromium.
"""

from __future__ import annotations

import html
import http.client
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from surfbench.bench.cli.cli import main as cli
from surfbench.bench.report.viewer_links import cell_path, episode_path, page_name, task_path
from surfbench.bench.view.episode_page import checks, first_divergence
from surfbench.bench.view.index import ViewIndex
from surfbench.bench.view.view_server import Site, make_server
from tests.conftest import ROOT

RUN = ROOT / "results" / "reference" / "forge-dev-qwen0.5b"
ROUTED = "forge__dispatcher__qwen2.5-coder-0.5b-instruct__prompted__near-current-user__r0"
"""A dispatcher episode whose ``forge`` calls were routed to ``user_get_current``; its answer check failed."""


@pytest.fixture(scope="module")
def site() -> Site:
    return Site(ViewIndex([RUN]))


@pytest.fixture(scope="module")
def base(site: Site) -> Iterator[str]:
    server = make_server(site, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host!s}:{port}/"
    server.shutdown()
    server.server_close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def text_of(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def test_the_first_page_lists_every_cell_with_the_reports_numbers(base: str):
    status, page = get(base)
    assert status == 200
    assert page.count('href="cell/') == 6  # six surfaces on one model
    text = text_of(page)
    assert "first-try args [95% CI]" in text and "270 episodes" in text
    assert re.search(r"dispatcher .* 45 ", text)


def test_a_cells_episodes_filter_by_outcome_error_tag_operation_and_request(site: Site, base: str):
    cell = next(c for c in site.index.cells if c.keys["surface"] == "dispatcher")
    status, page = get(base + cell_path(cell.keys))
    assert status == 200 and "45 of 45 episodes" in page
    frame = site.index.frame.loc[list(cell.positions)]
    tagged = int(frame["tags"].str.contains('"hot"').sum())
    assert f"{tagged} of 45 episodes" in get(base + cell_path(cell.keys) + "?tag=hot")[1]
    errors = int(frame["error_types"].str.contains('"wrong_operation"').sum())
    assert 0 < errors < 45
    assert f"{errors} of 45 episodes" in get(base + cell_path(cell.keys) + "?error=wrong_operation")[1]
    page = get(base + cell_path(cell.keys) + "?op=user_get_current")[1]
    assert "near-current-user" in page and "hot-repo-get" not in page
    page = get(base + cell_path(cell.keys) + "?q=release%2F1.0")[1]  # the request text, from the transcripts
    assert "cold-branch-create" in page and "1 of 45 episodes" in page
    assert "0 of 45 episodes" in get(base + cell_path(cell.keys) + "?outcome=pass")[1]  # the 0.5B model solves none


def test_an_episode_page_shows_steps_routing_validation_results_and_why_checks_failed(site: Site, base: str):
    row = site.index.frame.set_index("episode_key").loc[ROUTED]
    status, page = get(base + episode_path(ROUTED))
    assert status == 200
    text = text_of(page)
    assert f"{int(row['round_trips'])} steps" in text and int(row["round_trips"]) == 6
    assert "forge → user_get_current" in text  # the surface's tool, routed to the operation
    assert "answer failed no final answer" in text  # the failed check and its recorded reason
    assert "calls passed holds" in text
    assert text.count("the request the model saw") == 6  # each step's request, collapsed
    assert "<details><summary>the request the model saw" in page
    assert "tool block" in text and "prompt tokens" in text and "You are a forge assistant" in text


def test_a_task_across_cells_puts_every_cell_in_a_column_and_marks_the_first_divergence(base: str):
    status, page = get(base + task_path("forge", "cold-branch-create"))
    assert status == 200
    columns = re.findall(r'<div class="col" data-task="([^"]+)">', page)
    assert columns == ["cold-branch-create"] * 6
    assert "Expected calls: <b>branch_create</b>" in page
    assert page.count('<span class="diverged">') == 6  # none of the six made the expected call right
    assert "Create a branch called release/1.0" in page


def test_an_operation_page_lists_the_tasks_that_expect_it(base: str):
    status, page = get(base + "op/forge/branch_create.html")
    assert status == 200 and "2 task(s) expect it" in page and "right 0 of 12" in page  # 2 tasks x 6 cells
    assert "cold-branch-create" in page and "multi-branch-then-pr" in page and "schema_invalid" in page


@pytest.mark.parametrize(
    "path",
    [
        "episode/..%2F..%2Fetc%2Fpasswd",
        "episode/..%2F..%2Fetc%2Fpasswd.html",
        "episode/%2e%2e/%2e%2e/etc/passwd",
        "_static/..%2F..%2F..%2Fetc%2Fpasswd",
        "_static/%2e%2e%2fserver.py",
        "..%2Frun.json",
        "cell/..%2F..%2Frun.json.html",
        "task/forge/..%2F..%2F..%2Fetc%2Fpasswd.html",
    ],
)
def test_a_path_traversal_request_is_a_404_and_opens_no_file_outside_the_runs(base: str, path: str):
    opened: list[str] = []
    watching = threading.Event()

    def audit(event: str, args: tuple[object, ...]) -> None:
        if watching.is_set() and event == "open" and isinstance(args[0], str | bytes | Path):
            opened.append(str(args[0]))

    sys.addaudithook(audit)  # stays installed for the session, but records only while watching
    watching.set()
    try:
        status, page = get(base + path)
    finally:
        watching.clear()
    assert status == 404 and "root:" not in page
    outside = [p for p in opened if not Path(p).resolve().is_relative_to(RUN.resolve())]
    assert outside == []


def test_the_viewer_is_read_only(base: str):
    request = urllib.request.Request(base, data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 405


def test_the_first_divergence_from_the_expected_calls():
    def call(step: int, op: str | None, kind: str = "operation", **more: object) -> dict[str, object]:
        return {"step": step, "index": 0, "tool": "forge", "operation": op, "kind": kind, **more}

    expected = [["repo_get"], ["branch_create"]]
    assert first_divergence(expected, [call(0, "repo_get"), call(1, "branch_create")]) is None
    assert first_divergence(expected, [call(0, None, "meta"), call(1, "branch_create"), call(2, "repo_get")]) is None
    found = first_divergence(expected, [call(0, "repo_get"), call(1, "issue_get")])
    assert found is not None and (found.step, found.text) == (1, "called issue_get, expected branch_create")
    found = first_divergence(expected, [call(0, "repo_get", first_try_for="repo_get", first_try_correct=False)])
    assert found is not None and found.text == "repo_get: wrong arguments on the first try"
    found = first_divergence(expected, [call(0, "repo_get")])
    assert found is not None and found.step is None and found.text == "ended before calling branch_create"
    found = first_divergence([["a", "b"]], [call(0, "x", "rejected", error_type="not_exposed")])
    assert found is not None and found.text == "x: rejected (not_exposed)"


def test_failure_lines_go_to_the_check_that_wrote_them():
    row = {
        "calls_ok": True, "state_ok": False, "answer_ok": None, "refuse_ok": None,
        "failures": '["first try: x: wrong", "head: expected 2, got 1 (check: state)", '
        '"branch: main (check: turn_state)", "no final text answer (max_steps reached)", "odd (check: mine)"]',
    }  # fmt: skip
    found, loose = checks(row)
    assert [(c.name, c.passed, c.reasons) for c in found] == [
        ("calls", True, ()),
        ("state", False, ("head: expected 2, got 1", "branch: main")),
        ("mine", False, ("odd",)),
    ]
    assert loose == ["no final text answer (max_steps reached)"]


def test_page_names_are_safe_file_names():
    assert page_name("hot-issue-get") == "hot-issue-get"
    for unsafe in ("../../etc/passwd", "a/b", ".hidden", "x y", "é"):
        name = page_name(unsafe)
        assert re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*", name) and "/" not in name and ".." not in name
    assert page_name("a/b") != page_name("a_b")


def test_export_writes_every_page_as_files_whose_links_all_resolve(tmp_path: Path):
    out = tmp_path / "site"
    assert cli(["view", str(RUN), "--export", str(out)]) == 0
    pages = sorted(out.rglob("*.html"))
    assert len(list((out / "episode").glob("*.html"))) == 270 and len(list((out / "task").rglob("*.html"))) == 45
    assert (out / "_static" / "viewer.js").is_file() and not list(out.rglob("*.tmp"))
    broken = []
    for page in pages:
        for target in re.findall(r'(?:href|src)="([^"#?]+)', page.read_text(encoding="utf-8")):
            if not target.startswith("data:") and not (page.parent / target).resolve().is_file():
                broken.append(f"{page.relative_to(out)} -> {target}")
    assert broken == []
    assert "http://" not in (out / "index.html").read_text() and "https://" not in (out / "index.html").read_text()


def test_view_refuses_a_folder_that_is_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert cli(["view", str(tmp_path)]) == 2
    assert "is not a run folder (no run.json)" in capsys.readouterr().err


def test_surfbench_view_prints_its_address_serves_and_stops_on_ctrl_c():
    proc = subprocess.Popen(
        [sys.executable, "-m", "surfbench", "view", str(RUN), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # started with SIGINT ignored, as a background job of a script (or a test runner that ignores it) starts it:
        # Ctrl-C must still stop it (it hung in the full suite, whose earlier tests leave SIGINT ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        status, page = get(match.group(0))
        assert status == 200 and "Cells" in page
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0 and "stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()


def raw_get(port: int, path: str, host: str | None, method: str = "GET") -> tuple[int, str]:
    """A request through http.client with the ``Host`` header as given (None: none sent), as a browser page could."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


@pytest.mark.parametrize("host", ["attacker.example:{port}", "attacker.example", "127.0.0.1.nip.io:{port}",
                                  "localhost:{other}", "127.0.0.1:{other}", "localhost.:{port}", ""])  # fmt: skip
def test_a_request_naming_another_host_is_refused_so_a_rebound_name_reads_nothing(
    base: str, host: str, capsys: pytest.CaptureFixture[str]
):
    # a page on attacker.example whose name is rebound to 127.0.0.1 sends its own name as Host: refused
    port = int(base.rstrip("/").rsplit(":", 1)[1])
    capsys.readouterr()
    forged = host.format(port=port, other=port + 1 if port < 65535 else 1)
    status, page = raw_get(port, "/", forged)
    assert status == 421 and "Cells" not in page and "cell/" not in page
    assert "only answers 127.0.0.1, localhost and [::1]" in page and len(page) < 2000
    status, page = raw_get(port, "/", forged, method="POST")
    assert status == 421
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(f"refused a request for Host {forged!r}" in line for line in lines), lines
    assert "Traceback" not in "".join(lines)


@pytest.mark.parametrize("host", ["localhost", "localhost:{port}", "LocalHost:{port}", "127.0.0.1", "127.0.0.1:{port}",
                                  "[::1]", "[::1]:{port}", None])  # fmt: skip
def test_a_request_naming_the_loopback_is_answered(base: str, host: str | None):
    port = int(base.rstrip("/").rsplit(":", 1)[1])
    status, page = raw_get(port, "/", None if host is None else host.format(port=port))
    assert status == 200 and "Cells" in page


@pytest.fixture
def damaged(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A copy of the reference run served on 127.0.0.1: (its folder, the port)."""
    copy = tmp_path / "run"
    shutil.copytree(RUN, copy)
    server = make_server(Site(ViewIndex([copy])), 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield copy, int(server.server_address[1])
    server.shutdown()
    server.server_close()


def _truncate_steps(run: Path) -> None:
    for part in (run / "steps.parquet").glob("*.parquet"):
        part.write_bytes(part.read_bytes()[:100])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda run: shutil.rmtree(run), "is not a surfbench run (no run.json)"),
        (_truncate_steps, "Parquet magic bytes not found"),
        (lambda run: (run / "transcripts.zip").write_bytes(b"garbage" * 10), "transcripts.zip cannot be read"),
    ],
    ids=["removed", "truncated-steps", "garbage-transcripts"],
)
def test_a_run_damaged_while_served_gets_an_error_page_with_the_exports_one_line(
    damaged: tuple[Path, int], damage, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    run, port = damaged
    damage(run)
    capsys.readouterr()
    status, page = raw_get(port, "/" + episode_path(ROUTED), f"127.0.0.1:{port}")
    assert status == 500 and message in page
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1 and message in err
    assert raw_get(port, "/", f"127.0.0.1:{port}")[0] == 200  # the server still answers what it can
    if run.is_dir():  # --export over the same data: the same one line, exit 2
        assert cli(["view", str(run), "--export", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        shown = re.search(r"<p class=\"error\">(.*?)</p>", page)
        assert shown and "Traceback" not in err
        assert err.splitlines()[-1] == "surfbench: error: " + html.unescape(shown[1])


@pytest.mark.parametrize("target", ["/proc/version", "file"])
def test_view_export_into_a_file_is_one_line_and_leaves_the_file_intact(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    path = Path(target) if target.startswith("/") else tmp_path / target
    if not path.exists():
        path.write_text("keep me\n")
    before = path.read_bytes()
    assert cli(["view", str(RUN), "--export", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"surfbench: error: --export {path}: a file, not a folder; pass a new or existing folder" in err.splitlines()
    assert path.read_bytes() == before


def test_view_on_a_port_in_use_is_one_line(capsys: pytest.CaptureFixture[str]):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli(["view", str(RUN), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert (
        f"surfbench: error: --port {port}: cannot listen on 127.0.0.1:{port} (Address already in use); "
        "pass another port, or 0 for a free one"
    ) in err.splitlines()
