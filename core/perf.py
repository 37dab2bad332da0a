"""`python -m core perf`: speed as ratios against baselines measured in the same process.

The machines are shared and noisy, so every figure comes with its baseline from the same run:
raw SentenceTransformer.encode for encoding; numpy brute force and
sentence_transformers.util.semantic_search (ToolBench's retriever approach) for search.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from core.discovery import rtp
from core.index import VectorIndex
from core.lab import build_retriever, load_encoder, queries_for
from core.settings import Settings


def _timeit(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


def numpy_topk(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    scores = queries @ vectors.T
    part = np.argpartition(-scores, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1)
    return np.take_along_axis(part, order, axis=1)


def run_perf(settings: Settings, n_docs: int = 2000, n_queries: int = 100, k: int = 5) -> dict:
    import torch
    from sentence_transformers import util

    encoder = load_encoder(settings.embedding_model)
    retriever, info = build_retriever(settings, encoder=encoder)
    docs = retriever.registry.documents[:n_docs]
    texts = [q.query for q in queries_for(settings)][:n_queries]
    encoder.encode(docs[:64])  # warm-up

    ours = _timeit(lambda: encoder.encode(docs, batch_size=64), 1)[0]
    raw = _timeit(lambda: encoder.model.encode(docs, batch_size=64, normalize_embeddings=True,
                                               convert_to_numpy=True, show_progress_bar=False), 1)[0]

    vectors = retriever.index.vectors
    build = min(_timeit(lambda: VectorIndex(vectors), 3))

    for text in texts[:5]:
        rtp(text, k, retriever)
    latencies: list[float] = []
    for text in texts:
        start = time.perf_counter()
        rtp(text, k, retriever)
        latencies.append(time.perf_counter() - start)
    qv = encoder.encode(texts)

    single_faiss = _timeit(lambda: [retriever.index.search(v, k) for v in qv], 3)
    single_numpy = _timeit(lambda: [numpy_topk(vectors, v[None, :], k) for v in qv], 3)
    corpus_t, qv_t = torch.from_numpy(vectors), torch.from_numpy(qv)
    single_st = _timeit(lambda: [util.semantic_search(qv_t[i:i + 1], corpus_t, top_k=k) for i in range(len(qv))], 3)
    batch_faiss = _timeit(lambda: retriever.index.batch_search(qv, k), 5)
    batch_numpy = _timeit(lambda: numpy_topk(vectors, qv, k), 5)
    batch_st = _timeit(lambda: util.semantic_search(qv_t, corpus_t, top_k=k), 5)

    n = len(qv)
    per_query = {name: min(t) / n * 1000 for name, t in
                 (("faiss", single_faiss), ("numpy", single_numpy), ("semantic_search", single_st))}
    qps = {name: n / min(t) for name, t in
           (("faiss", batch_faiss), ("numpy", batch_numpy), ("semantic_search", batch_st))}
    return {
        "registry": info.registry, "registry_size": info.size, "model": info.model_id, "dim": info.dim,
        "torch_threads": torch.get_num_threads(),
        "encode": {"docs": len(docs), "docs_per_s": len(docs) / ours, "raw_docs_per_s": len(docs) / raw,
                   "ratio_vs_raw": raw / ours},
        "index_build_s": build,
        "rtp_latency_ms": {"queries": n, "p50": _pct(latencies, 50), "p95": _pct(latencies, 95),
                           "mean": statistics.fmean(latencies) * 1000},
        "single_search_ms": per_query,
        "single_search_speedup": {"vs_numpy": per_query["numpy"] / per_query["faiss"],
                                  "vs_semantic_search": per_query["semantic_search"] / per_query["faiss"]},
        "batch_qps": qps,
        "batch_speedup": {"vs_numpy": qps["faiss"] / qps["numpy"],
                          "vs_semantic_search": qps["faiss"] / qps["semantic_search"]},
    }
