"""VectorIndex against a brute-force numpy reference, on both prefilters (float32 BLAS and int8)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import core.retrieval.prefilter
from core.retrieval.index import VectorIndex
from core.retrieval.prefilter import (CHUNK, CODE_LIMITS, FloatScores, Int8Scores, _gemm_exact, exact_code_limit,
                                     make_scores)
from core.settings import PROJECT_ROOT


def unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_force(vectors: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every score as float32 of its float64 dot (the index's definition), best first, ties by lower row."""
    scores = (vectors.astype(np.float64) @ q.astype(np.float64)).astype(np.float32)
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return scores[order], order


SATURATES = "this CPU's integer GEMM is not exact for these codes: the index uses another prefilter (exact_code_limit)"


@pytest.fixture(params=["float", *(f"int8-{limit}" for limit in CODE_LIMITS)])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on every prefilter, whatever the index size: float32, and int8 with each code range where
    this CPU computes it exactly (+-64 is the AVX2-only CPU's path; it runs wherever its GEMM is exact)."""
    if request.param.startswith("int8"):
        limit = int(request.param.split("-")[1])
        if not _gemm_exact(limit):
            pytest.skip(SATURATES)
        monkeypatch.setattr(core.retrieval.prefilter, "exact_code_limit", lambda: limit)
    monkeypatch.setattr(core.retrieval.prefilter, "INT8_MIN_ROWS", 0 if request.param != "float" else 10 ** 12)
    return request.param


def check_exact(index: VectorIndex, vectors: np.ndarray, queries: np.ndarray, k: int) -> None:
    batch_scores, batch_rows = index.batch_search(queries, k)
    for i, q in enumerate(queries):
        ref_scores, ref_rows = brute_force(vectors, q, k)
        scores, rows = index.search(q, k)
        np.testing.assert_array_equal(rows, ref_rows)
        np.testing.assert_array_equal(scores, ref_scores)
        np.testing.assert_array_equal(batch_rows[i], ref_rows)
        np.testing.assert_array_equal(batch_scores[i], ref_scores)


def test_the_path_fixture_selects_the_prefilter(path: str) -> None:
    index = VectorIndex(unit(np.random.default_rng(0), 100, 8))
    assert isinstance(index._prefilter, FloatScores if path == "float" else Int8Scores)
    assert index.kernel == ("float32 BLAS" if path == "float" else
                            f"int8 MatMulInteger (ONNX Runtime), registry codes within +-{path.split('-')[1]}")


@pytest.mark.parametrize("k", [1, 5, 37])
def test_search_equals_numpy_brute_force(path: str, k: int) -> None:
    rng = np.random.default_rng(0)
    vectors, queries = unit(rng, 5000, 32), unit(rng, 20, 32)  # 5000: not a whole number of chunks
    check_exact(VectorIndex(vectors), vectors, queries, k)


def test_near_ties_below_int8_resolution_are_ranked_exactly(path: str) -> None:
    """200 rows within 1e-4 of the query: int8 cannot tell them apart, the exact rescoring must."""
    rng = np.random.default_rng(3)
    base = unit(rng, 1, 64)[0]
    near = base + 1e-4 * rng.standard_normal((200, 64)).astype(np.float32)
    vectors = np.vstack([unit(rng, 3000, 64), near / np.linalg.norm(near, axis=1, keepdims=True)])
    vectors = vectors[rng.permutation(len(vectors))]
    check_exact(VectorIndex(vectors), vectors, np.vstack([base, unit(rng, 3, 64)]), 10)


def test_ties_broken_by_row() -> None:
    base = np.eye(4, dtype=np.float32)
    vectors = np.vstack([base[1], base[0], base[0], base[2], base[0]])
    scores, rows = VectorIndex(vectors).search(base[0], 3)
    assert rows.tolist() == [1, 2, 4]
    assert scores.tolist() == [1.0, 1.0, 1.0]


def test_many_ties_across_chunks_keep_the_lowest_rows(path: str) -> None:
    """40 copies of the best vector spread over many chunks, more than any fixed over-fetch would cover."""
    rng = np.random.default_rng(4)
    vectors = unit(rng, 6000, 16)
    copies = np.sort(rng.choice(len(vectors), 40, replace=False))
    vectors[copies] = vectors[copies[-1]]
    scores, rows = VectorIndex(vectors).search(vectors[copies[0]], 25)
    assert rows.tolist() == copies[:25].tolist()
    assert len(set(scores.tolist())) == 1


def test_a_zero_query_ties_everywhere_and_returns_the_first_rows(path: str) -> None:
    vectors = unit(np.random.default_rng(5), 300, 8)
    scores, rows = VectorIndex(vectors).search(np.zeros(8, np.float32), 4)
    assert rows.tolist() == [0, 1, 2, 3] and scores.tolist() == [0.0] * 4


@pytest.mark.parametrize("size", [1, 3, CHUNK - 1, CHUNK + 1, 5 * CHUNK])
def test_small_indexes_and_k_larger_than_the_index(path: str, size: int) -> None:
    rng = np.random.default_rng(size)
    vectors, queries = unit(rng, size, 8), unit(rng, 4, 8)
    index = VectorIndex(vectors)
    check_exact(index, vectors, queries, 7)
    scores, rows = index.search(vectors[0], size + 10)
    assert sorted(rows.tolist()) == list(range(size)) and rows[0] == 0


def test_a_cpu_whose_int8_gemm_saturates_gets_the_float_prefilter(monkeypatch: pytest.MonkeyPatch) -> None:
    """On an AVX2-only CPU ONNX Runtime's uint8 x int8 GEMM saturates in int16, and the int8 bound then let wrong
    rows into the top k (k=37 here): such a CPU is found once and searched with the float prefilter."""
    monkeypatch.setattr(core.retrieval.prefilter, "INT8_MIN_ROWS", 0)
    monkeypatch.setattr(core.retrieval.prefilter, "exact_code_limit", lambda: None)
    rng = np.random.default_rng(0)
    vectors, queries = unit(rng, 5000, 32), unit(rng, 20, 32)
    index = VectorIndex(vectors)
    assert isinstance(index._prefilter, FloatScores)
    check_exact(index, vectors, queries, 37)


@pytest.mark.parametrize("limit", CODE_LIMITS)
def test_the_int8_error_bound_holds_and_prunes(limit: int) -> None:
    """|cheap - exact| <= bound for every pair, and the bound is tight enough to skip >95% of the rows with either
    code range."""
    if not _gemm_exact(limit):
        pytest.skip(SATURATES)
    rng = np.random.default_rng(6)
    vectors, queries = unit(rng, 20000, 64), unit(rng, 30, 64)
    scores = Int8Scores(vectors, CHUNK, limit)
    out = scores.scores(queries)
    exact = queries.astype(np.float64) @ vectors.T.astype(np.float64)
    step = np.abs(queries).max(axis=1).astype(np.float64) / 127.0 * scores.scale
    cheap = out.cheap[:, :len(vectors)] * step[:, None]
    assert (np.abs(cheap - exact) <= (out.bound * step)[:, None]).all()
    from core.retrieval.index import candidates
    _, rows = candidates(out, len(vectors), 5)
    assert len(rows) < 0.05 * len(vectors) * len(queries)


def test_a_saturating_gemm_is_found_by_its_worst_case() -> None:
    """The check multiplies extreme codes of one sign, where int16 pair sums overflow: an exact GEMM gives the int64
    product, so a CPU passes for +-127 only if it passes for +-64 (the AVX2 path) as well."""
    limit = exact_code_limit()
    assert limit is None or all(_gemm_exact(narrower) for narrower in CODE_LIMITS if narrower <= limit)


def test_chunk_maxima_are_maxima_of_real_rows() -> None:
    vectors = unit(np.random.default_rng(7), 3 * CHUNK + 5, 8)
    out = Int8Scores(vectors, CHUNK).scores(vectors[:2])
    for c in range(out.maxima.shape[1]):
        np.testing.assert_array_equal(out.maxima[:, c],
                                      out.cheap[:, c * CHUNK:min((c + 1) * CHUNK, len(vectors))].max(1))


def test_without_onnxruntime_the_float_prefilter_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setattr(core.retrieval.prefilter, "INT8_MIN_ROWS", 0)
    assert isinstance(make_scores(unit(np.random.default_rng(8), 100, 8)), FloatScores)


def test_subindex_maps_back_to_registry_rows(path: str) -> None:
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


def test_the_prefilter_graph_is_valid_onnx_without_importing_onnx() -> None:
    """core.retrieval.onnx_proto writes the bytes by hand; onnx's own parser and checker accept them."""
    import onnx

    codes = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    parsed = onnx.load_from_string(core.retrieval.prefilter._matmul_integer_model(codes, 2))
    onnx.checker.check_model(parsed, full_check=True)
    assert [n.op_type for n in parsed.graph.node] == ["MatMulInteger", "Reshape", "ReduceMax"]
    assert parsed.graph.node[2].attribute[0].name == "keepdims" and parsed.graph.node[2].attribute[0].i == 0
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(parsed.graph.initializer[0]), codes)
    dims = [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in parsed.graph.output]
    assert dims == [["n", 4], ["n", 2]]


@pytest.mark.subprocess
def test_building_an_index_imports_no_onnx() -> None:
    code = ("import sys, numpy as np; import core.retrieval.prefilter as p; "
            "from core.retrieval.index import VectorIndex; "
            "p.INT8_MIN_ROWS = 0; x = np.eye(8, dtype=np.float32); i = VectorIndex(x); "
            "print(type(i._prefilter).__name__, i.search(x[3], 1)[1].tolist(), 'onnx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Int8Scores" if exact_code_limit() else "FloatScores", "[3]", "False"]


def test_blockwise_quantisation_matches_the_whole_matrix_pass() -> None:
    """Int8Scores' codes and error terms, a block of rows at a time (the last block short), against one pass over the
    whole matrix: the same codes, and error terms equal up to float64 summation order."""
    from core.retrieval.prefilter import _quantised

    vectors = unit(np.random.default_rng(3), 1000, 48)
    scale = float(np.abs(vectors).max()) / 127.0
    codes, residue, norm = _quantised(vectors, scale, rows=64)
    whole = np.rint(vectors / np.float32(scale)).astype(np.int8)
    decoded = whole.astype(np.float64) * scale
    assert np.array_equal(codes, whole)
    assert residue == pytest.approx(np.sqrt(((vectors - decoded) ** 2).sum(axis=1)).max(), rel=1e-12)
    assert norm == pytest.approx(np.sqrt((decoded ** 2).sum(axis=1)).max(), rel=1e-12)
