"""Rank operations against a text: BM25 (no model) and sentence embeddings (all-MiniLM-L6-v2).

Used by the ``search`` and ``preselect`` surfaces. Both retrievers score every operation and return
hits best first with a score in [0, 1] (BM25 scores are divided by the best score; embeddings give
cosine similarity), so one similarity threshold means the same kind of thing for both.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from surfbench.bench.catalog import Operation

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    (
        "a an and are as at be by for from has have i in is it its me my of on or please the this to was we "
        "what with you your can could would should do does"
    ).split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case words; camelCase and snake_case split; plural 's' dropped; stop words removed."""
    words = _WORD.findall(_CAMEL.sub(" ", text).lower().replace("_", " "))
    out = []
    for w in words:
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
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
    operation: str
    score: float


class Retriever(Protocol):
    def rank(self, query: str) -> list[Hit]:
        """Every operation with its score in [0, 1], best first."""
        ...

    def prefetch(self, queries: Sequence[str]) -> None:
        """Prepare for these queries in one batch (a no-op where that buys nothing)."""
        ...


class BM25:
    """Okapi BM25 over operation texts; the operation name's words count twice."""

    def __init__(self, ops: Sequence[Operation], k1: float = 1.5, b: float = 0.75) -> None:
        self.names = [op.name for op in ops]
        docs = [tokenize(op.name) * 2 + tokenize(operation_text(op)) for op in ops]
        self.tf = [Counter(d) for d in docs]
        self.lengths = [len(d) for d in docs]
        self.avg = sum(self.lengths) / max(len(docs), 1)
        df = Counter(w for d in docs for w in set(d))
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        self.k1, self.b = k1, b

    def prefetch(self, queries: Sequence[str]) -> None:
        return None

    def rank(self, query: str) -> list[Hit]:
        terms = [t for t in tokenize(query) if t in self.idf]
        raw = []
        for name, tf, length in zip(self.names, self.tf, self.lengths, strict=True):
            score = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    score += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            raw.append((name, score))
        best = max((s for _, s in raw), default=0.0)
        hits = [Hit(name, s / best if best > 0 else 0.0) for name, s in raw]
        return sorted(hits, key=lambda h: -h.score)


class Embeddings:
    """Cosine similarity of sentence embeddings (all-MiniLM-L6-v2, see :mod:`surfbench.bench.embedding`)."""

    def __init__(self, ops: Sequence[Operation]) -> None:
        from surfbench.bench.embedding import MiniLM

        self.model = MiniLM.shared()
        self.names = [op.name for op in ops]
        self.matrix = self.model.encode_cached([operation_sentence(op) for op in ops])
        self._queries: dict[str, np.ndarray] = {}

    def prefetch(self, queries: Sequence[str]) -> None:
        todo = [q for q in dict.fromkeys(queries) if q not in self._queries]
        if len(self._queries) + len(todo) > 4096:
            self._queries.clear()
        for q, vec in zip(todo, self.model.encode(todo), strict=True):
            self._queries[q] = vec

    def rank(self, query: str) -> list[Hit]:
        if query not in self._queries:
            self.prefetch([query])
        sims = self.matrix @ self._queries[query]
        order = np.argsort(-sims, kind="stable")
        return [Hit(self.names[i], float(max(sims[i], 0.0))) for i in order]


RETRIEVERS = ("bm25", "embedding")


_SHARED: dict[tuple[str, tuple[str, ...]], Retriever] = {}


def make_retriever(kind: str, ops: Sequence[Operation]) -> Retriever:
    """A retriever over ``ops``; built once per (kind, operation texts) and shared by every session."""
    if kind not in RETRIEVERS:
        raise ValueError(f"unknown retriever {kind!r}; choose one of {', '.join(RETRIEVERS)}")
    key = (kind, tuple(operation_text(op) for op in ops))
    if key not in _SHARED:
        _SHARED[key] = BM25(ops) if kind == "bm25" else Embeddings(ops)
    return _SHARED[key]
