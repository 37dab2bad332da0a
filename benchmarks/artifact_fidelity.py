"""How faithful the shipped vectors are to exact float32 search, and what they cost: issue 10's table.

    .venv/bin/python benchmarks/artifact_fidelity.py [--registry full] [--json]

Needs the float32 embedding cache built by sentence-transformers (`python -m core index --rebuild`,
or `make index-artifact`, which leaves it in CACHE_DIR). For every encoding it searches the 1,100
benchmark queries and reports, against exact float32 search of the same registry: the share of
queries with an identical top-5 set, recall@5 per subset (api_list gold), the size on disk, and
single-query search latency (p50 over the queries, same process, interleaved).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.retrieval.embedding import cache_key, load_cached
from core.retrieval.index import VectorIndex
from core.retrieval.artifact import artifact_name, decode_payload, encode_payload
from core.retrieval.assemble import load_encoder
from core.data.loaders import queries_for, registry_for
from core.evaluation.metrics import recall_at_k
from core.settings import Settings
from core.data.toolbench import subset_order

K = 5


def faiss_search(index: faiss.Index, queries: np.ndarray, k: int) -> np.ndarray:
    faiss.omp_set_num_threads(1)
    return index.search(queries, k)[1]


def latency_ms(search, queries: np.ndarray) -> float:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        search(q.reshape(1, -1))
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--registry", default="full", choices=("full", "documented"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = Settings.from_env().with_(registry=args.registry)
    registry = registry_for(settings)
    encoder = load_encoder(settings.embedding_model, "numpy")
    exact = load_cached(settings.cache_dir, cache_key(encoder.model_id, registry), len(registry), encoder.dim)
    if exact is None:
        print("no float32 cache: run `python -m core index --rebuild` first", file=sys.stderr)
        return 1
    queries = queries_for(settings)
    qv = encoder.encode([q.query for q in queries])
    payload = encode_payload(exact)
    decoded = decode_payload(payload, *exact.shape)
    half_raw = exact.astype(np.float16).astype(np.float32)  # float16 as stored, not re-normalised
    sq8 = faiss.IndexScalarQuantizer(exact.shape[1], faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    sq8.train(exact)
    sq8.add(exact)
    fp16_index = faiss.IndexScalarQuantizer(exact.shape[1], faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    fp16_index.add(exact)
    flat_exact, flat_shipped = VectorIndex(exact), VectorIndex(decoded)
    raw_half = faiss.IndexFlatIP(exact.shape[1])
    raw_half.add(half_raw)
    variants = {
        "float32 (exact)": (lambda q, k: flat_exact.batch_search(q, k)[1], exact.nbytes),
        "shipped: float16 byte planes + zlib, re-normalised": (lambda q, k: flat_shipped.batch_search(q, k)[1],
                                                              len(payload)),
        "float16 .npy, not re-normalised": (lambda q, k: faiss_search(raw_half, q, k),
                                           exact.shape[0] * exact.shape[1] * 2),
        "FAISS QT_fp16": (lambda q, k: faiss_search(fp16_index, q, k), exact.shape[0] * exact.shape[1] * 2),
        "FAISS QT_8bit": (lambda q, k: faiss_search(sq8, q, k), exact.shape[0] * exact.shape[1]),
    }
    truth = variants["float32 (exact)"][0](qv, K)
    truth20 = variants["float32 (exact)"][0](qv, 20)
    subsets = subset_order({q.subset for q in queries})
    report: dict = {"registry": args.registry, "n_apis": len(registry), "n_queries": len(queries), "k": K,
                    "variants": {}}
    for name, (search, size) in variants.items():
        rows = search(qv, K)
        rows20 = search(qv, 20)
        same = [set(a) == set(b) for a, b in zip(rows, truth)]
        inside20 = [set(b) <= set(c) for b, c in zip(truth, rows20)]
        recall = {}
        for subset in subsets:
            idx = [i for i, q in enumerate(queries) if q.subset == subset]
            keys = lambda r: [registry.apis[j].key for j in r]  # noqa: E731
            recall[subset] = statistics.fmean(recall_at_k(keys(rows[i]), queries[i].gold("api_list"), K) for i in idx)
        report["variants"][name] = {"bytes": size, "identical_top5_share": statistics.fmean(same),
                                    "exact_top5_inside_top20": statistics.fmean(inside20),
                                    "recall_at_5_api_list": recall, "top20_overlap_with_exact":
                                        statistics.fmean(len(set(a) & set(b)) / 20 for a, b in zip(rows20, truth20))}
    sample = qv[:200]
    timings: dict[str, list[float]] = {"float32 flat (VectorIndex)": [], "shipped, decoded to float32 flat": [],
                                       "FAISS QT_fp16": []}
    for _ in range(3):  # interleaved rounds, so machine load hits every variant alike
        timings["float32 flat (VectorIndex)"].append(latency_ms(lambda q: flat_exact.search(q[0], K), sample))
        timings["shipped, decoded to float32 flat"].append(latency_ms(lambda q: flat_shipped.search(q[0], K), sample))
        timings["FAISS QT_fp16"].append(latency_ms(lambda q: faiss_search(fp16_index, q, K), sample))
    report["single_search_p50_ms"] = {name: round(statistics.median(v), 3) for name, v in timings.items()}
    t0 = time.perf_counter()
    decode_payload(payload, *exact.shape)
    report["decode_s"] = round(time.perf_counter() - t0, 3)
    report["artifact_file"] = artifact_name(encoder.model_id, args.registry)
    print(json.dumps(report, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
