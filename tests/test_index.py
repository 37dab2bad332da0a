from __future__ import annotations

import numpy as np
import pytest

from core.retrieval.index import VectorIndex


def unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_force(vectors: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    scores = vectors @ q
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return scores[order], order


@pytest.mark.parametrize("k", [1, 5, 37])
def test_search_equals_numpy_brute_force(k: int) -> None:
    rng = np.random.default_rng(0)
    vectors, queries = unit(rng, 2000, 32), unit(rng, 20, 32)
    index = VectorIndex(vectors)
    batch_scores, batch_rows = index.batch_search(queries, k)
    for i, q in enumerate(queries):
        ref_scores, ref_rows = brute_force(vectors, q, k)
        scores, rows = index.search(q, k)
        np.testing.assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(rows, ref_rows)
        np.testing.assert_array_equal(batch_rows[i], ref_rows)


def test_ties_broken_by_row() -> None:
    base = np.eye(4, dtype=np.float32)
    vectors = np.vstack([base[1], base[0], base[0], base[2], base[0]])
    scores, rows = VectorIndex(vectors).search(base[0], 3)
    assert rows.tolist() == [1, 2, 4]
    assert scores.tolist() == [1.0, 1.0, 1.0]


def test_k_larger_than_index_returns_everything() -> None:
    vectors = unit(np.random.default_rng(1), 3, 8)
    scores, rows = VectorIndex(vectors).search(vectors[0], 10)
    assert sorted(rows.tolist()) == [0, 1, 2] and rows[0] == 0


def test_subindex_maps_back_to_registry_rows() -> None:
    rng = np.random.default_rng(2)
    vectors = unit(rng, 500, 16)
    rows = np.array([3, 10, 77, 400, 499])
    sub = VectorIndex(vectors).subindex(rows)
    found_scores, found = sub.search(vectors[77], 2)
    assert found[0] == 77
    ref = rows[np.argsort(-(vectors[rows] @ vectors[77]), kind="stable")[:2]]
    assert found.tolist() == ref.tolist()


def test_rejects_unnormalised_vectors() -> None:
    with pytest.raises(ValueError, match="normalised"):
        VectorIndex(np.ones((3, 4), dtype=np.float32))


def test_rejects_bad_k() -> None:
    with pytest.raises(ValueError):
        VectorIndex(np.eye(3, dtype=np.float32)).search(np.eye(3, dtype=np.float32)[0], 0)
