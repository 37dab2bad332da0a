"""`python -m core perf`: speed as ratios against baselines measured in the same process.

The machines are shared and noisy, so every figure comes with its baseline from the same run:
raw SentenceTransformer.encode for corpus encoding; the sentence-transformers runtime and the numpy
forward pass for the query encoder; numpy brute force and sentence_transformers.util.semantic_search
(ToolBench's retriever approach) for search. Cold loads are timed in fresh interpreters, one per runtime.
The machine's load average is reported beside the figures: a loaded machine is a reason to rerun.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

from core.retrieval.archs import baseline
from core.retrieval.embedding import Encoder
from core.retrieval.index import VectorIndex
from core.retrieval.assemble import build_retriever, load_encoder, load_reference_encoder
from core.data.loaders import queries_for
from core.settings import PROJECT_ROOT, Settings
from core.threads import thread_report

COLD_LOAD = ("import time; t = time.perf_counter(); from core.retrieval.assemble import load_encoder; "
             "e = load_encoder({name!r}, {runtime!r}); e.encode(['warm up']); print(time.perf_counter() - t)")


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


def cold_load_s(name: str, runtime: str) -> float:
    """Seconds for a fresh interpreter to import, load and first use the query encoder."""
    out = subprocess.run([sys.executable, "-c", COLD_LOAD.format(name=name, runtime=runtime)], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def query_encoders(encoder: Encoder, reference: Encoder, numpy_encoder: Encoder, texts: list[str]) -> dict:
    """The query encoder against the sentence-transformers runtime (agreement, one-query latency, batch
    rate) and against the numpy forward pass (one-query latency)."""
    def single(enc: Encoder) -> list[float]:
        return [_timeit(lambda t=t: enc.encode([t]), 1)[0] for t in texts]

    ours_single, ref_single, numpy_single = single(encoder), single(reference), single(numpy_encoder)
    ours_batch = min(_timeit(lambda: encoder.encode(texts), 2))
    ref_batch = min(_timeit(lambda: reference.encode(texts), 2))
    diff = np.abs(encoder.encode(texts) - reference.encode(texts)).max()
    return {"runtime": encoder.runtime, "reference": reference.runtime,
            "max_abs_diff": float(diff),
            "single_p50_ms": _pct(ours_single, 50), "reference_single_p50_ms": _pct(ref_single, 50),
            "single_speedup": _pct(ref_single, 50) / _pct(ours_single, 50),
            "numpy_single_p50_ms": _pct(numpy_single, 50),
            "speedup_vs_numpy": _pct(numpy_single, 50) / _pct(ours_single, 50),
            "batch_qps": len(texts) / ours_batch, "reference_batch_qps": len(texts) / ref_batch,
            "batch_ratio": ref_batch / ours_batch}


def run_perf(settings: Settings, n_docs: int = 2000, n_queries: int = 100, k: int = 5) -> dict:
    """Every figure as a ratio against its baseline in this process. RtP and search are timed first, before torch
    is imported (as in the dashboard and the studies, which never load it): torch's thread pool beside ONNX
    Runtime's is the contention core.threads describes, and would be measured instead."""
    load_before = os.getloadavg()
    encoder = load_encoder(settings.embedding_model, settings.encoder_runtime, settings.cache_dir)
    retriever, info = build_retriever(settings, encoder=encoder)
    texts = [q.query for q in queries_for(settings)][:n_queries]
    encoder.encode(texts[:5])  # warm-up
    for text in texts[:5]:
        baseline().retrieve(text, None, k, retriever)
    latencies: list[float] = []
    for text in texts:
        start = time.perf_counter()
        baseline().retrieve(text, None, k, retriever)
        latencies.append(time.perf_counter() - start)
    qv = encoder.encode(texts)
    vectors = retriever.index.vectors
    single_index = _timeit(lambda: [retriever.index.search(v, k) for v in qv], 3)
    single_numpy = _timeit(lambda: [numpy_topk(vectors, v[None, :], k) for v in qv], 3)
    batch_index = _timeit(lambda: retriever.index.batch_search(qv, k), 5)
    batch_numpy = _timeit(lambda: numpy_topk(vectors, qv, k), 5)
    build = min(_timeit(lambda: VectorIndex(vectors), 3))
    threads = thread_report()  # before torch: what the timings above ran with

    import torch
    from sentence_transformers import util

    cold = {runtime: cold_load_s(settings.embedding_model, runtime) for runtime in ("auto", "numpy", "torch")}
    reference = load_reference_encoder(settings.embedding_model)
    docs = retriever.registry.documents[:n_docs]
    reference.encode(docs[:64])  # warm-up
    ours = _timeit(lambda: reference.encode(docs, batch_size=64), 1)[0]
    raw = _timeit(lambda: reference.model.encode(docs, batch_size=64, normalize_embeddings=True,
                                                 convert_to_numpy=True, show_progress_bar=False), 1)[0]
    queries = query_encoders(encoder, reference, load_encoder(settings.embedding_model, "numpy"), texts)
    corpus_t, qv_t = torch.from_numpy(vectors), torch.from_numpy(qv)
    single_st = _timeit(lambda: [util.semantic_search(qv_t[i:i + 1], corpus_t, top_k=k) for i in range(len(qv))], 3)
    batch_st = _timeit(lambda: util.semantic_search(qv_t, corpus_t, top_k=k), 5)

    n = len(qv)
    auto_runtime = load_encoder(settings.embedding_model, "auto", settings.cache_dir).runtime
    per_query = {name: min(t) / n * 1000 for name, t in
                 (("index", single_index), ("numpy", single_numpy), ("semantic_search", single_st))}
    qps = {name: n / min(t) for name, t in
           (("index", batch_index), ("numpy", batch_numpy), ("semantic_search", batch_st))}
    return {
        "registry": info.registry, "registry_size": info.size, "model": info.model_id, "dim": info.dim,
        "threads": {**threads, "torch (loaded after RtP and search were timed)": thread_report()["torch"]},
        "index_kernel": retriever.index.kernel,
        "encoder_cold_load_s": {f"query encoder ({auto_runtime})": cold["auto"], "numpy": cold["numpy"],
                                "sentence-transformers": cold["torch"]},
        "query_encode": queries,
        "encode": {"docs": len(docs), "docs_per_s": len(docs) / ours, "raw_docs_per_s": len(docs) / raw,
                   "ratio_vs_raw": raw / ours},
        "index_build_s": build,
        "rtp_latency_ms": {"queries": n, "p50": _pct(latencies, 50), "p95": _pct(latencies, 95),
                           "mean": statistics.fmean(latencies) * 1000},
        "single_search_ms": per_query,
        "single_search_speedup": {"vs_numpy": per_query["numpy"] / per_query["index"],
                                  "vs_semantic_search": per_query["semantic_search"] / per_query["index"]},
        "batch_qps": qps,
        "batch_speedup": {"vs_numpy": qps["index"] / qps["numpy"],
                          "vs_semantic_search": qps["index"] / qps["semantic_search"]},
        "load_average": {"before": load_before, "after": os.getloadavg()},
    }
