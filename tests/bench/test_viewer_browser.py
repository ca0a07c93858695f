"""The viewer and the HTML report in a real browser: headless Chromium driven by Playwright (issue 33).

Playwright drives the system Chromium (``/usr/bin/chromium``, which .ci/run installs); it downloads no browser.
The viewer runs on the committed forge reference run of the 0.5B model (6 cells x 45 tasks): the test goes from
the runs to a cell, filters it, opens an episode and the same task across cells, and checks what a user sees
there; then it does the same on the ``--export`` folder opened from disk, without a server. The reports are
rendered from the reference runs: one size (the front door's model, 0.5B) and two sizes (0.5B and 1.5B).

``SURFBENCH_SHOTS=docs/images`` also writes the viewer's screenshots there (the docs' images).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.cli.cli import main as cli
from surfbench.bench.report.report import write_report
from surfbench.bench.view.index import ViewIndex
from surfbench.bench.view.view_server import Site, make_server
from tests.conftest import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REFERENCE = ROOT / "results" / "reference"
RUN = REFERENCE / "forge-dev-qwen0.5b"
WIDTH = 1200

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).is_file(), reason="chromium not installed (Debian package chromium; .ci/run installs it)"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[dev]'")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    tab = browser.new_page(viewport={"width": WIDTH, "height": 760})
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.errors = errors
    yield tab
    tab.close()
    assert errors == [], errors  # no script error, no blocked or missing file on any page


@pytest.fixture(scope="module")
def viewer() -> Iterator[str]:
    server = make_server(Site(ViewIndex([RUN])), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    yield f"http://{host!s}:{port}/"
    server.shutdown()
    server.server_close()


def shot(page: Any, name: str, tmp_path: Path) -> None:
    """A screenshot of the visible page: into tmp_path, and into $SURFBENCH_SHOTS as a small PNG when set."""
    path = tmp_path / name
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000
    folder = os.environ.get("SURFBENCH_SHOTS")
    if folder:
        from PIL import Image

        Image.open(path).convert("RGB").quantize(colors=64).save(Path(folder) / name, optimize=True)


def fits(page: Any) -> None:
    """Nothing wider than the page: no sideways scroll of the page; a wide table scrolls inside its own box."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= WIDTH, f"{page.url}: the page is {width} px wide in a {WIDTH} px window"
    boxes = page.evaluate(
        "Array.from(document.querySelectorAll('table')).map(t => t.parentElement.getBoundingClientRect().right)"
    )
    assert all(right <= WIDTH for right in boxes)


def walk(page: Any, index_url: str, tmp_path: Path | None) -> None:
    """Runs -> cell -> filtered list -> episode -> the task across cells, checking what a user sees on each."""
    page.goto(index_url)
    assert page.locator("#cells tbody tr").count() == 6
    fits(page)
    if tmp_path:
        shot(page, "viewer-runs.png", tmp_path)
    page.locator("#cells a", has_text="dispatcher").click()
    page.wait_for_load_state()
    assert page.locator("#count").inner_text() == "45 of 45 episodes"
    page.select_option("select[name=op]", "user_get_current")
    page.locator("#filters button").click()
    page.wait_for_load_state()
    assert page.locator("#count").inner_text().startswith("1 of 45 episodes")
    assert page.locator("#episodes tbody tr:visible").count() == 1
    fits(page)
    if tmp_path:
        shot(page, "viewer-cell.png", tmp_path)
    page.locator("#episodes tbody tr:visible a", has_text="near-current-user").click()
    page.wait_for_load_state()
    assert page.locator("#step-count").inner_text() == "6 steps"
    assert page.locator("section.step").count() == 6
    assert page.locator("table.calls td", has_text="forge → user_get_current").count() == 6  # routed, each step
    answer = page.locator("#checks tr", has_text="answer")
    assert "failed" in answer.inner_text() and "no final answer" in answer.inner_text()
    assert page.evaluate("document.querySelectorAll('section.step details[open]').length") == 0  # collapsed
    page.locator("section.step details summary").first.click()
    assert "You are a forge assistant" in page.locator("section.step details").first.inner_text()
    fits(page)
    if tmp_path:
        shot(page, "viewer-episode.png", tmp_path)
    page.locator("a", has_text="this task on every cell").click()
    page.wait_for_load_state()
    columns = page.locator("#across thead .col")
    assert columns.count() == 6 >= 3
    assert {columns.nth(i).get_attribute("data-task") for i in range(6)} == {"near-current-user"}
    heads = " ".join(columns.nth(i).inner_text() for i in range(3))
    assert "core /" in heads and "dispatcher /" in heads and "full /" in heads
    assert page.locator("#across .diverged").count() >= 1
    fits(page)
    if tmp_path:
        shot(page, "viewer-task.png", tmp_path)


def test_the_viewer_from_runs_to_a_task_across_cells(page: Any, viewer: str, tmp_path: Path):
    walk(page, viewer, tmp_path)


def test_the_export_opens_from_disk_without_a_server(page: Any, tmp_path: Path):
    out = tmp_path / "site"
    assert cli(["view", str(RUN), "--export", str(out)]) == 0
    walk(page, (out / "index.html").as_uri(), None)
    cell = next(iter(sorted((out / "cell").glob("*.html"))))
    page.goto(cell.as_uri() + "?outcome=pass")  # a report's link with a filter: the page applies it
    assert page.locator("#count").inner_text() == "0 of 45 episodes"


def check_report(page: Any, path: Path) -> list[str]:
    """Open a report.html; check that no section is empty and nothing is wider than the page; its figures."""
    page.goto(path.as_uri())
    empty = page.evaluate(
        """() => Array.from(document.querySelectorAll('h2')).filter(h => {
             let rows = 0, images = 0, tables = 0, prose = 0;
             for (let n = h.nextElementSibling; n && n.tagName !== 'H2'; n = n.nextElementSibling) {
               tables += n.querySelectorAll('table').length;
               rows += n.querySelectorAll('tbody tr').length;
               images += n.tagName === 'FIGURE' ? n.querySelectorAll('img').length : 0;
               prose += n.tagName === 'P' && n.textContent.trim() ? 1 : 0;
             }
             return !(rows || images || (prose && !tables));  // a table with rows, a figure, or a line saying why
           }).map(h => h.textContent)"""
    )
    assert empty == [], f"{path}: sections with nothing to show: {empty}"
    assert page.evaluate("document.querySelectorAll('tbody:empty').length") == 0
    fits(page)
    return page.evaluate("Array.from(document.querySelectorAll('figcaption')).map(f => f.textContent)")


def test_report_html_of_one_and_of_two_model_sizes(page: Any, tmp_path: Path):
    _, one = write_report([RUN], tmp_path / "front-door", baseline="core")  # the front door's model and surfaces
    figures = check_report(page, one)
    assert "tokens vs accuracy" in figures and "accuracy by model size" not in figures
    runs = [RUN, REFERENCE / "llama-cpp-python" / "forge-dev-qwen1.5b"]
    _, two = write_report(runs, tmp_path / "two-sizes")
    assert "accuracy by model size" in check_report(page, two)


def test_a_step_shows_the_tool_block_as_sent_once_expanded(page: Any, tmp_path: Path):
    from surfbench.bench.catalog.wire import compact_json
    from surfbench.bench.report.viewer_links import episode_path
    from tests.bench.test_viewer_tools import catalog_ops, tool_run

    run = tool_run(tmp_path / "run", ("full",), limit=1)  # the scripted oracle: one episode of the full surface
    site = Site(ViewIndex([run]))
    server = make_server(site, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        host, port = server.server_address[:2]
        page.goto(f"http://{host!s}:{port}/" + episode_path(str(site.index.frame["episode_key"][0])))
        name, description = catalog_ops()[0]
        tool = page.locator("section.step").first.locator("pre", has_text=compact_json(description)[1:-1])
        assert tool.count() == 1 and not tool.is_visible()  # collapsed by default
        step = page.locator("section.step").first
        step.locator("summary").first.click()  # the request the model saw
        assert not tool.is_visible()  # the tool block is collapsed inside it
        step.locator("summary", has_text="the tool block as sent").click()
        assert tool.is_visible() and f'"name":"{name}"' in tool.inner_text()
        fits(page)
    finally:
        server.shutdown()
        server.server_close()
