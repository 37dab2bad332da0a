"""Exact inner-product search over L2-normalised vectors, ties broken by row (lower first).

Why not faiss.IndexFlatIP (which this replaced): in faiss-cpu 1.15 distance_compute_blas_threshold is
128,000, and a batch of 20-100 queries (perf's 100) does not take the BLAS path: each query runs the
SIMD scan on its own, re-reading the whole 72 MB float32 matrix (larger than the 32 MB L3) from
memory: 2.04 ms per query, against 0.29 ms with the threshold set to 20 (same run; 1,100 queries
took BLAS either way, 0.20 ms); k and the BLAS block size changed nothing (181 ms per 100 either way).
A single query is that scan, memory-bound: 2.7-3.7 ms
on one OpenMP thread, 6.5-7 ms on two when the other core is busy (the team waits for its slower
thread); OMP_WAIT_POLICY=PASSIVE did not help (231 ms, 8.7 ms in the run after).

Here a cheap score with a proven error bound (core.retrieval.prefilter: int8, 18 MB) picks the
candidates and only they are scored exactly. Candidates are the rows whose cheap score is within
twice the bound of a lower bound of the k-th best cheap score, which provably holds every row of
the exact top-k, ties included. The lower bound is the k-th best of per-chunk maxima (k chunks
each hold a row at least that good), so no full partial sort of [n, N] scores is needed.
"""
from __future__ import annotations

import numpy as np

from core.retrieval.embedding import assert_normalised
from core.retrieval.prefilter import CHUNK, Scores, make_scores


class VectorIndex:
    """The vectors, a prefilter over them and the mapping from their rows to registry rows."""

    def __init__(self, vectors: np.ndarray, rows: np.ndarray | None = None) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        assert_normalised(vectors)
        self.dim = vectors.shape[1]
        self.rows = np.arange(len(vectors), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        self.vectors = vectors
        self._prefilter = make_scores(vectors)

    def __len__(self) -> int:
        return len(self.vectors)

    @property
    def kernel(self) -> str:
        """Which prefilter this CPU and size got (core.retrieval.prefilter.make_scores), as `perf` reports it."""
        return self._prefilter.kernel

    def subindex(self, rows: np.ndarray) -> VectorIndex:
        """An index over some of this index's rows (registry-row ids kept), for the scaling study."""
        rows = np.asarray(rows, dtype=np.int64)
        return VectorIndex(self.vectors[rows], self.rows[rows])

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, registry rows) of the top-k for one query vector, best first."""
        scores, rows = self._search(query.reshape(1, -1), k)
        return scores[0], rows[0]

    def batch_search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of shape (n, k') with k' = min(k, size); rows are registry rows."""
        return self._search(queries, k)

    def _search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        queries, k = search_args(queries, k, len(self))
        query_of, rows = candidates(self._prefilter.scores(queries), len(self), k)
        # float32 of the float64 dot: the same cosine whatever the BLAS or the batch shape.
        exact = np.einsum("ij,ij->i", self.vectors[rows], queries[query_of], dtype=np.float64).astype(np.float32)
        order = np.lexsort((rows, -exact, query_of))
        counts = np.bincount(query_of, minlength=len(queries))
        if counts.min(initial=k) < k:
            raise AssertionError("the prefilter's bound let a top-k row through")  # cannot happen if the bound holds
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        take = order[starts[:, None] + np.arange(k)]
        return exact[take], self.rows[rows[take]]


def search_args(queries: np.ndarray, k: int, size: int) -> tuple[np.ndarray, int]:
    """Every index's search arguments checked alike: float32 rows in C order, and k (>= 1) capped at the size."""
    if k < 1:
        raise ValueError("k must be at least 1")
    return np.ascontiguousarray(queries, dtype=np.float32), min(k, size)


def candidates(scores: Scores, size: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(query index, row) of every row whose cheap score is >= (lower bound of the k-th best) - 2 * bound."""
    maxima = scores.maxima
    chunks = maxima.shape[1]
    if chunks <= k:
        threshold = np.full(len(maxima), -np.inf)
    else:
        threshold = np.partition(maxima, chunks - k, axis=1)[:, chunks - k] - 2.0 * scores.bound
    query_of, chunk = np.nonzero(maxima >= threshold[:, None])
    columns = chunk[:, None] * CHUNK + np.arange(CHUNK)
    values = scores.cheap[query_of[:, None], np.minimum(columns, scores.cheap.shape[1] - 1)]
    keep = (columns < size) & (values >= threshold[query_of][:, None])
    return np.broadcast_to(query_of[:, None], keep.shape)[keep], columns[keep]
