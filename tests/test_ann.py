"""Approximate indexes (HNSW, IVF) against brute force, their rows mapping, caching and parameter checks."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core.retrieval.ann import AnnIndex, IndexSpec, cache_path, make_index
from core.retrieval.index import VectorIndex
from core.settings import Settings


def clustered(rng: np.random.Generator, n: int, dim: int = 48, clusters: int = 40) -> np.ndarray:
    """Unit vectors around random centres (cosine ~0.7 to their centre): embeddings are clustered, not uniform."""
    centres = rng.standard_normal((clusters, dim))
    x = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    scores = queries @ vectors.T
    return np.stack([np.lexsort((np.arange(len(s)), -s))[:k] for s in scores])


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found.tolist(), truth.tolist())]))


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    vectors = clustered(rng, 4000)
    near = vectors[rng.integers(0, len(vectors), 200)] + 0.1 * rng.standard_normal((200, vectors.shape[1]))
    return vectors, (near / np.linalg.norm(near, axis=1, keepdims=True)).astype(np.float32)


# Recall bound: 0.95 at k=10. Both indexes search well past the 4,000-vector toy scale here (HNSW's beam of 64
# over M=16 links; IVF probes 16 of 64 lists, a quarter of the data), and on clustered data like this they
# measure 0.99-1.00 on 2 cores. A wrong rows mapping, a metric mix-up or a search parameter left unset drops
# recall far below the bound (a random answer scores 10/4000).
@pytest.mark.parametrize("spec", [IndexSpec("hnsw", hnsw_m=16, hnsw_ef_construction=64, hnsw_ef_search=64),
                                  IndexSpec("ivf", ivf_nlist=64, ivf_nprobe=16)], ids=["hnsw", "ivf"])
def test_recall_against_brute_force_and_scores_are_exact(data, spec: IndexSpec) -> None:
    vectors, queries = data
    index = AnnIndex(spec, vectors)
    truth = exact_top(vectors, queries, 10)
    scores, rows = index.batch_search(queries, 10)
    assert recall(rows, truth) >= 0.95
    np.testing.assert_allclose(scores, np.einsum("qd,qkd->qk", queries, vectors[rows]), atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-7).all()  # best first
    single = np.stack([index.search(q, 10)[1] for q in queries[:20]])
    np.testing.assert_array_equal(single, rows[:20])
    # The search-time parameter goes with every call: a one-wide search of the same index recalls less.
    narrow = index.with_search(**{"hnsw_ef_search" if spec.kind == "hnsw" else "ivf_nprobe": 1})
    assert recall(narrow.batch_search(queries, 10)[1], truth) < recall(rows, truth) - 0.02
    assert recall(index.batch_search(queries, 10)[1], truth) == recall(rows, truth)


def test_ivf_probing_every_list_is_exact_with_ties_by_row() -> None:
    base = np.eye(8, dtype=np.float32)
    vectors = np.vstack([base[i % 8] for i in range(400)])  # every vector repeated 50 times: ties everywhere
    index = AnnIndex(IndexSpec("ivf", ivf_nlist=8, ivf_nprobe=8), vectors)
    scores, rows = index.search(base[3], 5)
    assert rows.tolist() == [3, 11, 19, 27, 35] and scores.tolist() == [1.0] * 5
    reference = VectorIndex(vectors).search(base[3], 5)[1]
    assert rows.tolist() == reference.tolist()


def test_rows_mapping_and_subindex(data) -> None:
    vectors, _ = data
    rows = np.array([5, 17, 999, 2500, 3999, 42, 1234], dtype=np.int64)
    for spec in (IndexSpec("hnsw", hnsw_m=8, hnsw_ef_construction=16), IndexSpec("ivf", ivf_nprobe=4)):
        parent = AnnIndex(spec, vectors)
        sub = parent.subindex(rows)
        assert len(sub) == len(rows) and sub.spec.kind == spec.kind
        for row in rows:
            scores, found = sub.search(vectors[row], 3)
            assert found[0] == row and set(found) <= set(rows.tolist())
            assert scores[0] == pytest.approx(1.0, abs=1e-5)
        assert np.array_equal(sub.vectors, vectors[rows]) and np.array_equal(sub.rows, rows)
        nested = sub.subindex(np.array([1, 3]))  # positions in the sub-index, registry rows kept
        assert sorted(nested.search(vectors[17], 2)[1].tolist()) == [17, 2500]


def test_ivf_lists_follow_the_size_and_nprobe_is_capped() -> None:
    spec = IndexSpec("ivf", ivf_nprobe=32)
    assert spec.for_size(1_000_000).ivf_nlist == 4000  # 4*sqrt(n)
    assert spec.for_size(47_038).ivf_nlist == 868
    small = spec.for_size(200)  # at most n/39 lists, so each has FAISS's minimum of training points
    assert small.ivf_nlist == 5 and small.ivf_nprobe == 5
    assert IndexSpec("hnsw").for_size(10) == IndexSpec("hnsw")


@pytest.mark.parametrize(("changes", "message"), [
    ({"kind": "annoy"}, "INDEX must be one of flat, hnsw, ivf"),
    ({"kind": "hnsw", "hnsw_m": 1}, "HNSW_M must be from 2 to 256"),
    ({"kind": "hnsw", "hnsw_m": 64, "hnsw_ef_construction": 32}, "HNSW_EF_CONSTRUCTION must be at least HNSW_M"),
    ({"kind": "hnsw", "hnsw_ef_search": 0}, "HNSW_EF_SEARCH must be at least 1"),
    ({"kind": "ivf", "ivf_nlist": 0}, "IVF_NLIST must be at least 1"),
    ({"kind": "ivf", "ivf_nlist": 16, "ivf_nprobe": 32}, r"IVF_NPROBE \(32\) cannot exceed IVF_NLIST \(16\)"),
])
def test_parameters_are_validated_with_the_setting_named(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IndexSpec(**changes)


def test_settings_read_the_index_and_refuse_bad_values(tmp_path) -> None:
    env = {"CACHE_DIR": str(tmp_path), "INDEX": "HNSW", "HNSW_M": "12", "HNSW_EF_SEARCH": "40"}
    spec = IndexSpec.of(Settings.from_env(env=env))
    assert (spec.kind, spec.hnsw_m, spec.hnsw_ef_search, spec.hnsw_ef_construction) == ("hnsw", 12, 40, 200)
    assert IndexSpec.of(Settings.from_env(env={"CACHE_DIR": str(tmp_path)})).kind == "flat"
    with pytest.raises(ValueError, match="INDEX must be one of flat, hnsw, ivf, not 'annoy'"):
        Settings.from_env(env={"INDEX": "annoy"})
    with pytest.raises(ValueError, match="HNSW_M must be a whole number from 2 to 256, not 'many'"):
        Settings.from_env(env={"INDEX": "hnsw", "HNSW_M": "many"})
    with pytest.raises(ValueError, match="IVF_NLIST=500 needs at least 500 vectors"):
        AnnIndex(IndexSpec("ivf", ivf_nlist=500), clustered(np.random.default_rng(3), 100))


def test_params_and_provenance_name_only_the_kind_used() -> None:
    assert IndexSpec().to_json() == {"kind": "flat"}
    assert IndexSpec("hnsw", hnsw_m=8, hnsw_ef_construction=20, hnsw_ef_search=30).to_json() == {
        "kind": "hnsw", "hnsw_m": 8, "hnsw_ef_construction": 20, "hnsw_ef_search": 30}
    assert IndexSpec("ivf", ivf_nlist=10, ivf_nprobe=3).slug() == "ivf-nlist10"
    assert IndexSpec("hnsw", hnsw_m=8, hnsw_ef_construction=20).slug() == "hnsw-m8-ef_construction20"


def test_ann_indexes_are_cached_by_vectors_and_parameters(data, tmp_path) -> None:
    vectors, queries = data
    spec = IndexSpec("hnsw", hnsw_m=8, hnsw_ef_construction=32, hnsw_ef_search=32)
    first, made = make_index(spec, vectors, tmp_path)
    assert made == "built" and cache_path(tmp_path, spec, vectors).is_file()
    again, made = make_index(spec, vectors, tmp_path)
    assert made == "cache"
    np.testing.assert_array_equal(again.batch_search(queries, 5)[1], first.batch_search(queries, 5)[1])
    wider, made = make_index(replace(spec, hnsw_ef_search=200), vectors, tmp_path)
    assert made == "cache" and wider.spec.hnsw_ef_search == 200  # a search-time parameter: the same file
    _, made = make_index(IndexSpec("hnsw", hnsw_m=12, hnsw_ef_construction=32), vectors, tmp_path)
    assert made == "built"  # other build parameters, another file
    _, made = make_index(spec, vectors[:-1], tmp_path)
    assert made == "built"  # other vectors, another file
    cache_path(tmp_path, spec, vectors).write_bytes(b"not a faiss index")
    _, made = make_index(spec, vectors, tmp_path)
    assert made == "built"  # a damaged file is rebuilt, not trusted
    flat, made = make_index(IndexSpec(), vectors, tmp_path)
    assert made == "exact" and isinstance(flat, VectorIndex)


def test_build_retriever_uses_the_configured_index_and_records_it(tiny_env, monkeypatch) -> None:
    from core.retrieval.assemble import build_retriever
    from core.retrieval.embedding import SentenceTransformerEncoder
    from tests.helpers import FakeEncoder

    class CorpusFake(FakeEncoder):
        runtime = SentenceTransformerEncoder.runtime  # embeds the corpus itself: no reference model is loaded

    monkeypatch.setenv("INDEX", "hnsw")
    monkeypatch.setenv("HNSW_EF_SEARCH", "50")
    retriever, info = build_retriever(Settings.from_env(), encoder=CorpusFake())
    assert isinstance(retriever.index, AnnIndex)
    assert info.index == {"kind": "hnsw", "hnsw_m": 32, "hnsw_ef_construction": 200, "hnsw_ef_search": 50,
                          "made": "built"}
    assert info.to_json()["index"]["kind"] == "hnsw"
    _, again = build_retriever(Settings.from_env(), encoder=CorpusFake())
    assert again.index["made"] == "cache"


def test_a_damaged_cached_index_is_rebuilt_not_used(data, tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 23: an ANN file with bytes changed in place (size kept) is found by its recorded digest and rebuilt."""
    vectors, queries = data
    spec = IndexSpec("hnsw", hnsw_m=8, hnsw_ef_construction=32, hnsw_ef_search=32)
    index, how = make_index(spec, vectors, tmp_path)
    assert how == "built"
    path = cache_path(tmp_path, spec, vectors)
    expected = index.batch_search(queries, 5)
    assert make_index(spec, vectors, tmp_path)[1] == "cache"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2: len(raw) // 2 + 4096] = bytes(4096)
    path.write_bytes(bytes(raw))
    with caplog.at_level("WARNING"):
        again, how = make_index(spec, vectors, tmp_path)
    assert how == "built" and any("ANN index" in r.getMessage() for r in caplog.records)
    assert path.read_bytes() != bytes(raw) and make_index(spec, vectors, tmp_path)[1] == "cache"
    _, rows = again.batch_search(queries, 5)
    assert np.mean(rows[:, 0] == expected[1][:, 0]) > 0.9  # an index of the same vectors (HNSW builds may differ)
