"""The README is a short front page that starts with the two commands; no link in it or in docs/ is broken."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 300

FENCE = re.compile(r"^(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, code spans blanked out."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(CODE_SPAN.sub("", line))
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w keeps letters, digits and underscores
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a link may point at in a markdown file, duplicates numbered as GitHub does."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(HTML_ANCHOR.findall(line))
        match = HEADING.match(line)
        if match:
            slug = github_slug(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    """Each relative link of ``page`` whose file or heading anchor does not exist, with the reason."""
    broken = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: ...
                continue
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / unquote(path_part)).resolve() if path_part else page
            if not dest.exists():
                broken.append(f"{target}: no such file {dest}")
            elif anchor:
                if dest.suffix != ".md" or dest.is_dir():
                    broken.append(f"{target}: an anchor into a file that is not markdown")
                elif unquote(anchor) not in anchors(dest):
                    broken.append(f"{target}: no heading #{anchor} in {path_part or page.name}")
    return broken


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_an_existing_file_and_heading(page: Path):
    assert broken_links(page) == []


def test_the_link_check_catches_a_missing_file_a_missing_heading_and_ignores_code(tmp_path: Path):
    (tmp_path / "other.md").write_text("# Stuck episodes and `stop_on_repeat`\n\n## Notes\n\n## Notes\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#stuck-episodes-and-stop_on_repeat) [dup](other.md#notes-1) [self](#top)\n"
        "# Top\n"
        "[gone](missing.md) [bad anchor](other.md#nothing-here) [web](https://example.org/x.md)\n"
        "`[in code](nowhere.md)`\n```\n[in a fence](nowhere.md)\n```\n"
    )
    problems = broken_links(page)
    assert len(problems) == 2
    assert problems[0].startswith("missing.md: no such file")
    assert problems[1].startswith("other.md#nothing-here: no heading")


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("What each surface shows the model (static report)", "what-each-surface-shows-the-model-static-report"),
        ("The embedding retriever, and why this one", "the-embedding-retriever-and-why-this-one"),
        ("Stuck episodes and `stop_on_repeat`", "stuck-episodes-and-stop_on_repeat"),
        ("Results: BFCL v4, Qwen2.5-Coder-0.5B", "results-bfcl-v4-qwen25-coder-05b"),
        ("A five-minute tour", "a-five-minute-tour"),
    ],
)
def test_heading_anchors_are_computed_as_github_does(heading: str, slug: str):
    assert github_slug(heading) == slug


def test_the_readme_is_a_front_page_of_at_most_300_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move details into docs/"


def test_the_readme_starts_with_the_two_make_commands():
    first = [line for line in README.read_text(encoding="utf-8").splitlines() if line.strip()][:4]
    assert first[0].startswith("```")
    assert first[1].split("#")[0].split() == ["make", "run"]
    assert first[2].split("#")[0].split() == ["make", "test"]
    assert first[3].strip() == "```"


def linked_files(page: Path) -> set[Path]:
    """The files a page's relative links point at."""
    text = "\n".join(prose_lines(page.read_text(encoding="utf-8")))
    return {(page.parent / target.partition("#")[0]).resolve() for target in LINK.findall(text)}


@pytest.mark.parametrize(
    "index", [DOCS / "README.md", DOCS / "results" / "README.md"], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_docs_page_is_listed_in_its_index(index: Path):
    pages_here = {p.resolve() for p in index.parent.glob("*.md")} | {
        p.resolve() for p in index.parent.glob("*/README.md")
    }
    unlisted = pages_here - linked_files(index) - {index.resolve()}
    assert sorted(str(p.relative_to(ROOT)) for p in unlisted) == []


def unclosed_fences(text: str) -> list[str]:
    """Lines that should close a code block but carry text after the fence (the block then runs on), or a fence
    left open at the end of the page."""
    problems, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not FENCE.match(stripped):
            continue
        if fenced and stripped not in ("```", "~~~"):
            problems.append(f"line {number}: {stripped[:40]!r} inside a code block (a closing fence takes no text)")
            continue
        fenced = not fenced
    return problems + (["a code block is still open at the end"] if fenced else [])


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_is_closed_by_a_bare_fence(page: Path):
    assert unclosed_fences(page.read_text(encoding="utf-8")) == []


def test_the_fence_check_finds_text_after_a_closing_fence():
    assert unclosed_fences("```yaml\na: 1\n``` Every failed check\n\nprose\n```\n")[0].startswith("line 3:")
    assert unclosed_fences("```yaml\na: 1\n```\n\nprose\n") == []
