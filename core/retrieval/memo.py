"""A retriever whose encoder embeds each distinct text once: what every study runs on."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.retrieval.discovery import Retriever


class MemoEncoder:
    """Wraps an encoder: each distinct text is encoded once, one encoder call at a time.

    Threads that ask while another is encoding leave their texts in a shared pending set, and the
    next holder of the lock encodes all of them in one batch, so concurrent callers are batched.
    The lock also keeps a non-thread-safe encoder (HF fast tokenizers) safe under the thread pool.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.runtime = inner.runtime
        self._memo: dict[str, np.ndarray] = {}
        self._pending: dict[str, None] = {}
        self._pending_lock = threading.Lock()
        self._encode_lock = threading.Lock()

    def encode_queries(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """The query side, memoised: what every search asks for (the document side is the inner encoder's)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._pending_lock:
            self._pending.update((t, None) for t in texts if t not in self._memo)
        with self._encode_lock:
            with self._pending_lock:
                batch = [t for t in self._pending if t not in self._memo]
                self._pending.clear()
            if batch:
                for text, vec in zip(batch, self.inner.encode_queries(batch, batch_size=batch_size)):
                    self._memo[text] = vec
        return np.stack([self._memo[t] for t in texts])

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Any = None) -> np.ndarray:
        return self.inner.encode(texts, batch_size=batch_size, progress=progress)

    def encode_corpus(self, texts: Sequence[str], *, batch_size: int = 64, progress: Any = None) -> np.ndarray:
        return self.inner.encode_corpus(texts, batch_size=batch_size, progress=progress)


def memoised(retriever: Retriever) -> Retriever:
    """The same retriever with a MemoEncoder (idempotent)."""
    if isinstance(retriever.encoder, MemoEncoder):
        return retriever
    return Retriever(retriever.registry, MemoEncoder(retriever.encoder), retriever.index, retriever.corpus_vectors)

