"""Rank operations against a text: BM25 (no model), sentence embeddings (all-MiniLM-L6-v2), and both fused.

Used by the ``search`` and ``preselect`` surfaces and by ``surfbench retrieval``. Every retriever
scores every operation and returns hits best first with a score in [0, 1] (BM25 scores are divided by
the best score; embeddings give cosine similarity; the hybrid gives reciprocal-rank fusion divided by
its best), so one similarity threshold means the same kind of thing for each.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from surfbench.bench.catalog.catalog import Operation

if TYPE_CHECKING:
    from surfbench.bench.catalog.embedding import MiniLM

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    (
        "a an and are as at be by for from has have i in is it its me my of on or please the this to was we "
        "what with you your can could would should do does"
    ).split()
)
RRF_K = 60
"""Reciprocal-rank fusion constant (Cormack et al. 2009): a hit's fused score is sum of 1 / (60 + rank)."""


_RUN = re.compile(r"[A-Za-z0-9]+")
_RUN_TOKENS: dict[str, tuple[str, ...]] = {}
"""Letter-digit run -> its index words; runs repeat across a catalog, so each is split and normalised once."""


def _normal(word: str) -> str:
    if word in _STOP:
        return ""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _run_tokens(run: str) -> tuple[str, ...]:
    return tuple(n for n in (_normal(w) for w in _WORD.findall(_CAMEL.sub(" ", run).lower())) if n)


def tokenize(text: str) -> list[str]:
    """Lower-case words; camelCase and snake_case split; plural 's' dropped; stop words removed."""
    if len(_RUN_TOKENS) > 500_000:
        _RUN_TOKENS.clear()
    out: list[str] = []
    for run in _RUN.findall(text):  # "_" and punctuation separate runs; camelCase splits inside one
        words = _RUN_TOKENS.get(run)
        if words is None:
            words = _RUN_TOKENS[run] = _run_tokens(run)
        out.extend(words)
    return out


def operation_text(op: Operation) -> str:
    """What a retriever sees of an operation: name, category, description, argument names."""
    args = " ".join(op.parameters.get("properties", {}))
    return f"{op.name} {op.category} {op.description} {args}"


def operation_sentence(op: Operation) -> str:
    """What the embedding model sees: the name's words and the first sentence (MiniLM reads sentences)."""
    return f"{' '.join(tokenize(op.name))}. {op.summary}"


@dataclass(frozen=True)
class Hit:
    """One ranked operation."""

    operation: str
    """The operation's name."""
    score: float
    """Similarity in [0, 1]; 0: nothing in common with the query."""


class Retriever(Protocol):
    """Ranks a catalog's operations against a query text."""

    def rank(self, query: str) -> list[Hit]:
        """Every operation with its score in [0, 1], best first."""
        ...

    def top(self, query: str, n: int) -> list[Hit]:
        """The best ``n`` operations (what ``rank(query)[:n]`` gives, without ranking the rest)."""
        ...

    def prefetch(self, queries: Sequence[str]) -> None:
        """Prepare for these queries in one batch (a no-op where that buys nothing)."""
        ...


def _best_first(names: Sequence[str], scores: np.ndarray, n: int | None) -> list[Hit]:
    """Hits by descending score (ties in catalog order), the first ``n`` (None: all)."""
    count = len(names) if n is None else min(n, len(names))
    if count <= 0:
        return []
    if count < len(names):
        # argpartition picks the best `count` (ties at the edge by lowest index after the stable sort below)
        cut = np.argpartition(-scores, count - 1)[:count]
        edge = scores[cut].min()
        cut = np.flatnonzero(scores >= edge)
        order = cut[np.argsort(-scores[cut], kind="stable")][:count]
    else:
        order = np.argsort(-scores, kind="stable")
    return [Hit(names[i], float(scores[i])) for i in order]


class BM25:
    """Okapi BM25 over operation texts; the operation name's words count three times.

    An inverted index (postings in one CSR array, a slice per word) makes a query cost the postings of
    its words, not the size of the catalog: 10,000 operations rank in well under a millisecond.
    """

    def __init__(self, ops: Sequence[Operation], k1: float = 1.5, b: float = 0.75) -> None:
        self.names = [op.name for op in ops]
        docs = []
        for op in ops:
            name = tokenize(op.name)
            args = " ".join(op.parameters.get("properties", {}))
            # what operation_text holds (name, category, description, argument names), the name's words once more
            docs.append(name * 3 + tokenize(f"{op.category} {op.description} {args}"))
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        avg = float(lengths.mean()) if len(docs) else 1.0
        norm = k1 * (1 - b + b * lengths / max(avg, 1e-9))
        # postings as one CSR array (word id -> slice of doc ids and weights): no per-word array objects
        vocab: dict[str, int] = {}
        word_ids: list[int] = []
        doc_ids: list[int] = []
        counts: list[int] = []
        for i, doc in enumerate(docs):
            tf_doc = Counter(doc)
            word_ids.extend([vocab.setdefault(word, len(vocab)) for word in tf_doc])
            doc_ids.extend([i] * len(tf_doc))
            counts.extend(tf_doc.values())
        words = np.array(word_ids, dtype=np.int64)
        postings = np.array(doc_ids, dtype=np.int64)
        tf = np.array(counts, dtype=np.float64)
        df = np.bincount(words, minlength=len(vocab)).astype(np.float64)
        idf = np.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        weights = idf[words] * tf * (k1 + 1) / (tf + norm[postings])
        order = np.argsort(words, kind="stable")
        self._vocab = vocab
        self._postings, self._weights = postings[order], weights[order]
        self._offsets = np.concatenate([[0], np.cumsum(df.astype(np.int64))])
        self.idf = dict(zip(vocab, idf.tolist(), strict=True))
        self.k1, self.b = k1, b

    def prefetch(self, queries: Sequence[str]) -> None:
        """Nothing to prepare: BM25 needs no model."""
        return None

    def scores(self, query: str) -> np.ndarray:
        """Each operation's score for ``query``, divided by the best (all 0 when no word matches)."""
        out = np.zeros(len(self.names), dtype=np.float64)
        for term in tokenize(query):
            word = self._vocab.get(term)
            if word is not None:  # a word's postings hold each document once: plain fancy-index addition
                lo, hi = self._offsets[word], self._offsets[word + 1]
                out[self._postings[lo:hi]] += self._weights[lo:hi]
        best = float(out.max()) if len(out) else 0.0
        return out / best if best > 0 else out

    def rank(self, query: str) -> list[Hit]:
        """Every operation with its score, best first."""
        return _best_first(self.names, self.scores(query), None)

    def top(self, query: str, n: int) -> list[Hit]:
        """The best ``n`` operations."""
        return _best_first(self.names, self.scores(query), n)


class Embeddings:
    """Cosine similarity of sentence embeddings (all-MiniLM-L6-v2, see :mod:`surfbench.bench.catalog.embedding`)."""

    def __init__(self, ops: Sequence[Operation]) -> None:
        from surfbench.bench.catalog.embedding import MiniLM

        self.names = [op.name for op in ops]
        # the weights load only when something must be embedded: a cached catalog needs none until a query
        self.matrix = MiniLM.encode_cached(cast(MiniLM, _LazyModel()), [operation_sentence(op) for op in ops])
        self._queries: dict[str, np.ndarray] = {}

    @property
    def model(self) -> MiniLM:
        """The shared all-MiniLM-L6-v2 model (loaded on first use)."""
        from surfbench.bench.catalog.embedding import MiniLM

        return MiniLM.shared()

    def prefetch(self, queries: Sequence[str]) -> None:
        """Embed these queries in one batch."""
        todo = [q for q in dict.fromkeys(queries) if q not in self._queries]
        if len(self._queries) + len(todo) > 4096:
            self._queries.clear()
        for q, vec in zip(todo, self.model.encode(todo), strict=True):
            self._queries[q] = vec

    def scores(self, query: str) -> np.ndarray:
        """Each operation's cosine similarity to ``query`` (negative ones as 0)."""
        if query not in self._queries:
            self.prefetch([query])
        return np.maximum(self.matrix @ self._queries[query], 0.0)

    def rank(self, query: str) -> list[Hit]:
        """Every operation with its score, best first."""
        return _best_first(self.names, self.scores(query), None)

    def top(self, query: str, n: int) -> list[Hit]:
        """The best ``n`` operations."""
        return _best_first(self.names, self.scores(query), n)


class _LazyModel:
    """Stands in for MiniLM in ``encode_cached``: loads the shared model only if the cache misses."""

    def encode(self, texts: Sequence[str], batch: int = 16) -> np.ndarray:
        from surfbench.bench.catalog.embedding import MiniLM

        return MiniLM.shared().encode(texts, batch)


class Hybrid:
    """BM25 and embeddings fused by reciprocal rank: an operation either one ranks high ranks high.

    BM25 finds the rare exact word ("ruleset"); embeddings find a paraphrase with no word in common
    ("Who am I logged in as?" -> get the authenticated user). An operation neither scores above 0 keeps 0.
    """

    def __init__(self, ops: Sequence[Operation]) -> None:
        self.names = [op.name for op in ops]
        self.parts: tuple[BM25, Embeddings] = (BM25(ops), Embeddings(ops))

    def prefetch(self, queries: Sequence[str]) -> None:
        """Embed these queries in one batch."""
        self.parts[1].prefetch(queries)

    def scores(self, query: str) -> np.ndarray:
        """Fused score of each operation, divided by the best."""
        fused = np.zeros(len(self.names), dtype=np.float64)
        for part in self.parts:
            raw = part.scores(query)
            order = np.argsort(-raw, kind="stable")
            ranks = np.empty(len(order), dtype=np.float64)
            ranks[order] = np.arange(1, len(order) + 1)
            fused += np.where(raw > 0, 1.0 / (RRF_K + ranks), 0.0)
        best = float(fused.max()) if len(fused) else 0.0
        return fused / best if best > 0 else fused

    def rank(self, query: str) -> list[Hit]:
        """Every operation with its score, best first."""
        return _best_first(self.names, self.scores(query), None)

    def top(self, query: str, n: int) -> list[Hit]:
        """The best ``n`` operations."""
        return _best_first(self.names, self.scores(query), n)


RETRIEVERS = ("bm25", "embedding", "hybrid")
ALIASES = {"embed": "embedding", "embeddings": "embedding", "rrf": "hybrid"}


def retriever_kind(kind: str) -> str:
    """The canonical retriever name for ``kind`` (``embed`` -> ``embedding``); ValueError when unknown."""
    canonical = ALIASES.get(kind, kind)
    if canonical not in RETRIEVERS:
        raise ValueError(f"unknown retriever {kind!r}; choose one of {', '.join(RETRIEVERS)}")
    return canonical


def select_hits(hits: Sequence[Hit], k: int, threshold: float = 0.0, min_k: int = 0) -> list[Hit]:
    """What a surface shows of ranked ``hits``: the top ``k`` scoring above 0 and at least ``threshold``.

    ``min_k``: when fewer than ``min_k`` pass, the best ``min_k`` are shown anyway (a fallback, so that
    a request sharing no word with its operation still gets tools), scores of 0 included.
    """
    chosen = [h for h in hits[:k] if h.score > 0 and h.score >= threshold]
    if len(chosen) < min_k:
        return list(hits[: min(min_k, k)])
    return chosen


_SHARED: dict[tuple[str, tuple[str, ...]], Retriever] = {}


def make_retriever(kind: str, ops: Sequence[Operation]) -> Retriever:
    """A retriever over ``ops``; built once per (kind, operation texts) and shared by every session."""
    kind = retriever_kind(kind)
    key = (kind, tuple(operation_text(op) for op in ops))
    if key not in _SHARED:
        if len(_SHARED) > 16:  # a scale sweep builds one per catalog size: keep memory bounded
            _SHARED.clear()
        built: Retriever = BM25(ops) if kind == "bm25" else Embeddings(ops) if kind == "embedding" else Hybrid(ops)
        _SHARED[key] = built
    return _SHARED[key]
