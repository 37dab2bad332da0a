"""The real data, the real offline MiniLM model and real FAISS, on a small stratified sub-registry."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.study.evaluate import aggregate, score_query
from core.retrieval.archs import arch, discover
from core.retrieval.assemble import build_retriever, load_encoder
from core.data.registry import Registry, stratified_rows
from core.settings import Settings
from core.data.toolbench import PAPER_SUBSETS, load_queries, load_registry
from tests.helpers import rtp_of

pytestmark = pytest.mark.slow
SUB_REGISTRY_SIZE = 800


@pytest.fixture(scope="module")
def real_setup(real_data: Path, tmp_path_factory: pytest.TempPathFactory):
    full = Registry("full", tuple(load_registry(real_data, "full")))
    queries = [q for s in PAPER_SUBSETS for q in load_queries(real_data) if q.subset == s]
    chosen = [q for s in PAPER_SUBSETS for q in [q for q in queries if q.subset == s][:4]]
    gold_rows = full.rows_of(k for q in chosen for k in q.gold("api_list") | q.gold("relevant"))
    rows = stratified_rows(full, SUB_REGISTRY_SIZE, gold_rows, seed=0)
    sub = Registry("integration", tuple(full.apis[r] for r in rows))
    cache = tmp_path_factory.mktemp("cache")
    settings = Settings.from_env(env={"CACHE_DIR": str(cache), "LLM_BACKEND": "offline"})
    retriever, info = build_retriever(settings, encoder=load_encoder("all-MiniLM-L6-v2"), registry=sub)
    return settings, retriever, info, chosen


def test_real_model_vectors_and_cache(real_setup) -> None:
    settings, retriever, info, _ = real_setup
    assert info.model_id == "sentence-transformers/all-MiniLM-L6-v2" and info.dim == 384
    assert info.size == SUB_REGISTRY_SIZE and info.source == "built"
    # Queries go through ONNX Runtime (the default); sentence-transformers built the corpus: same vectors.
    assert info.runtime == "onnx"
    rows = list(range(0, SUB_REGISTRY_SIZE, 40))
    again_by_onnx = retriever.encode([retriever.registry.documents[r] for r in rows])
    assert np.abs(again_by_onnx - retriever.corpus_vectors[rows]).max() < 1e-5
    again, info2 = build_retriever(settings, encoder=retriever.encoder, registry=retriever.registry)
    assert info2.source == "cache"  # a second start computes nothing


def test_rtp_finds_gold_with_the_real_model(real_setup) -> None:
    _, retriever, _, chosen = real_setup
    found = discover(arch("rtp"), [q.query for q in chosen], None, [5], retriever)[5]
    scores = [score_query(q, d.keys, "api_list", 5) for q, d in zip(chosen, found)]
    summary = aggregate(scores)
    # On an 800-API registry that holds every gold API, MiniLM finds a good share of them.
    assert summary["recall"] > 0.3 and summary["hit_rate"] > 0.7
    for query, batched in zip(chosen[:3], found):
        single = rtp_of(query.query, 5, retriever)
        assert single.keys == batched.keys
        assert single.top1_score == pytest.approx(batched.top1_score, abs=1e-5)


def test_unicode_and_huge_query_with_the_real_model(real_setup) -> None:
    _, retriever, _, _ = real_setup
    assert len(rtp_of("天气预报 🌦️ weather forecast for Zürich", 5, retriever).hits) == 5
    assert len(rtp_of("translate this text " * 5000, 5, retriever).hits) == 5
