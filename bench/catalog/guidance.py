"""Guidance beside tools: a suite's snippets on how and when to use its operations, injected for the request.

The ollie lessons: "embeddings select the relevant capabilities before generation; injected prompts explain how and
when to use those capabilities", at most three snippets per request above a similarity threshold. A suite ships
snippets as ``guidance/*.md`` in its folder, each a Markdown file with a front matter of two fields::

    ---
    title: Open a pull request from a new branch
    description: the user wants a change made on a new branch and a pull request opened for it
    ---
    First branch_create (new_branch_name, old_branch_name: the base), then pull_create with head: the new
    branch and base: the branch it came from. Pass owner and repo separately (acme/web: owner acme, repo web).

A surface's ``guidance`` option (``guidance: {k: 3, threshold: 0.2, retriever: bm25, min_k: 0}``, on any surface
kind) ranks the snippets' title and description against the user's request with preselect's retrievers
(:mod:`surfbench.bench.catalog.retrieval`: ``bm25``, ``embedding``, ``hybrid``; the same ``k``, ``threshold`` and
``min_k`` rule, :func:`~surfbench.bench.catalog.retrieval.select_hits`) and puts the chosen ones' text in the
surface's system text (:func:`render`), so that they count in the request's wire bytes and tokens like tool text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from surfbench.bench.base.bounded import ReadRefused, read_text
from surfbench.bench.catalog.catalog import Catalog, CatalogError, Operation, Snippet
from surfbench.bench.catalog.retrieval import Hit, make_retriever, retriever_kind, select_hits

GUIDANCE_DIR = "guidance"
"""The folder of a suite's snippets, beside its suite.yaml."""
FRONT_KEYS = ("title", "description")
OPTION_KEYS = ("k", "threshold", "retriever", "min_k")
HEADER = "Guidance for this request (how to use the tools for it):"


def read_snippet(path: Path) -> Snippet:
    """One snippet file: front matter (``title``, ``description``) between ``---`` lines, then its text."""
    where = str(path)
    try:
        text = read_text(path, "suite file")
    except ReadRefused as exc:
        raise CatalogError(where, exc.problem) from None
    except UnicodeDecodeError as exc:
        raise CatalogError(where, f"not UTF-8 text (byte {exc.start})") from None
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---" or "---" not in [line.strip() for line in lines[1:]]:
        raise CatalogError(where, "a snippet starts with a front matter: ---, title: ..., description: ..., ---")
    end = 1 + [line.strip() for line in lines[1:]].index("---")
    try:
        front = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise CatalogError(where, f"front matter: invalid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(front, Mapping):
        raise CatalogError(where, "front matter must be a mapping of title and description")
    unknown = sorted(str(k) for k in set(front) - set(FRONT_KEYS))
    if unknown:
        raise CatalogError(where, f"front matter: unknown key(s) {unknown} (known: {', '.join(FRONT_KEYS)})")
    for key in FRONT_KEYS:
        if not isinstance(front.get(key), str) or not front[key].strip():
            raise CatalogError(where, f"front matter: {key!r} must be non-empty text")
    body = "\n".join(lines[end + 1 :]).strip()
    if not body:
        raise CatalogError(where, "the snippet has no text after its front matter")
    return Snippet(path.stem, " ".join(front["title"].split()), " ".join(front["description"].split()), body)


def load_guidance(folder: Path) -> tuple[Snippet, ...]:
    """The snippets of ``folder/guidance/*.md``, by file name; () when there is no such folder."""
    root = folder / GUIDANCE_DIR
    if not root.is_dir():
        return ()
    return tuple(read_snippet(path) for path in sorted(root.glob("*.md")) if path.is_file())


def attach(catalog: Catalog, folder: Path | None, passthrough: Sequence[str] | None = None) -> Catalog:
    """The catalog with its suite's guidance (``folder/guidance``) and declared pass-through parameters.

    The same object when there is nothing to add (the catalog is rebuilt, and checked again, only when there is).
    """
    snippets = load_guidance(folder) if folder is not None else ()
    if not snippets and passthrough is None:
        return catalog
    return dataclasses.replace(
        catalog,
        guidance=snippets or catalog.guidance,
        declared_passthrough=tuple(passthrough) if passthrough is not None else catalog.declared_passthrough,
    )


def from_source(catalog: Catalog) -> Catalog:
    """The catalog with the guidance beside the file it was loaded from, when it has none yet.

    ``tasks/forge/backend.py:ForgeBackend`` -> ``tasks/forge/guidance``: what ``surfbench surfaces --catalog`` measures.
    """
    if catalog.guidance:
        return catalog
    path = Path(catalog.source.rpartition(":")[0] if ".py:" in catalog.source else catalog.source)
    return attach(catalog, path.parent) if path.is_file() else catalog


def snippet_text(snippet: Snippet) -> str:
    """How one snippet reads in the system text."""
    return f"## {snippet.title}\n{snippet.body}"


def render(snippets: Sequence[Snippet]) -> str:
    """The system text the chosen snippets add ("" for none)."""
    if not snippets:
        return ""
    return "\n\n".join([HEADER, *(snippet_text(s) for s in snippets)])


def _as_operation(snippet: Snippet) -> Operation:
    """A snippet as the retrievers see an operation: its name, and its title and description as the summary."""
    text = f"{snippet.title.rstrip('.')}. {snippet.description}"
    return Operation(snippet.name, text, {"type": "object", "properties": {}}, category="guidance")


@dataclass
class Guide:
    """A surface's ``guidance`` option over a catalog's snippets: which ones a request gets."""

    snippets: tuple[Snippet, ...]
    k: int = 3
    threshold: float = 0.0
    retriever: str = "bm25"
    min_k: int = 0

    def __post_init__(self) -> None:
        self._by_name = {s.name: s for s in self.snippets}
        ops = [_as_operation(s) for s in self.snippets]
        self._ranker = make_retriever(self.retriever, ops) if ops else None

    def hits(self, request: str) -> list[Hit]:
        """The snippets for ``request``, best first (the top ``k`` at or above ``threshold``, at least ``min_k``)."""
        if self._ranker is None or not request.strip():
            return []
        return select_hits(self._ranker.top(request, self.k), self.k, self.threshold, self.min_k)

    def pick(self, request: str) -> list[Snippet]:
        return [self._by_name[h.operation] for h in self.hits(request)]

    def text(self, request: str) -> str:
        """What the request's system text gains."""
        return render(self.pick(request))

    def prefetch(self, requests: Sequence[str]) -> None:
        if self._ranker is not None:
            self._ranker.prefetch([r for r in requests if r.strip()])


def make_guide(catalog: Catalog, option: object, kind: str) -> Guide | None:
    """The ``guidance`` option of a surface checked (ValueError naming the surface and the key), or None unset.

    ``true`` takes the defaults (k 3, threshold 0, bm25); ``false`` or null: no guidance. A catalog without
    snippets gives a guide that injects nothing (the static report says so).
    """
    if option is None or option is False:
        return None
    if option is True:
        option = {}
    if not isinstance(option, Mapping):
        raise ValueError(f"surface {kind!r}: guidance must be a mapping {{k, threshold, retriever, min_k}} or true")
    unknown = sorted(str(key) for key in set(option) - set(OPTION_KEYS))
    if unknown:
        raise ValueError(f"surface {kind!r}: guidance: unknown key(s) {unknown} (known: {', '.join(OPTION_KEYS)})")
    k, threshold, min_k = option.get("k", 3), option.get("threshold", 0.0), option.get("min_k", 0)
    whole = all(isinstance(v, int) and not isinstance(v, bool) for v in (k, min_k))
    if not whole or k < 1 or not 0 <= min_k <= k:
        raise ValueError(f"surface {kind!r}: guidance: k must be a whole number >= 1 and min_k within [0, k]")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"surface {kind!r}: guidance: threshold must be a number within [0, 1], got {threshold!r}")
    retriever = retriever_kind(str(option.get("retriever", "bm25")))
    return Guide(catalog.guidance, int(k), float(threshold), retriever, int(min_k))
