"""The retriever axis's speed and exactness: query encoding and RtP per retriever on the full registry, in one
process (issue 35).

    nice -n 10 .venv/bin/python benchmarks/retriever_speed.py [--queries 100] [--json]

For each installed declared embedding model and BM25: p50 / p95 milliseconds of encoding one query (the encoder the
lab serves it with), beside sentence-transformers' for the same model where it can load the model (every model
shipped as a sentence-transformers folder), and RtP's p50 / p95 (encode + search of the full registry, as the
Inspector calls it). Each figure is timed on the same queries, one at a time, after a warm-up; the load is printed.

Exactness, on all 1,100 benchmark queries, as the share whose top-5 set is the reference's:
- `search`: the index's top 5 against numpy's exact top 5 over the same corpus vectors (the prefilter and the
  FAISS path against brute force);
- `encoder`: the top 5 of the served query vectors against those of the reference encoder's (sentence-transformers
  where it loads the model; for an ONNX-only model, ONNX Runtime on each query alone, unbatched and unpadded);
  a model served by sentence-transformers itself is its own reference and reports none.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.data.loaders import queries_for
from core.embedding_models import EMBEDDING_MODELS
from core.retrieval.archs import baseline
from core.retrieval.assemble import build_retriever, load_reference_encoder
from core.retrieval.embed_install import EmbedInstallError
from core.retrieval.lexical import bm25_retriever
from core.settings import Settings


def timed(call, items: list[str]) -> dict[str, float]:
    call(items[0])  # warm
    seconds = []
    for item in items:
        start = time.perf_counter()
        call(item)
        seconds.append(time.perf_counter() - start)
    return {"p50_ms": round(1000 * statistics.median(seconds), 2),
            "p95_ms": round(1000 * float(np.percentile(seconds, 95)), 2)}


def top5_sets(vectors: np.ndarray, corpus: np.ndarray) -> list[frozenset[int]]:
    """numpy's exact top 5 of each row (ties to the lower row, as the indexes break them)."""
    out = []
    for start in range(0, len(vectors), 64):
        scores = vectors[start:start + 64] @ corpus.T
        for row in scores:
            order = np.lexsort((np.arange(row.size), -row))[:5]
            out.append(frozenset(int(i) for i in order))
    return out


def same_share(a: list[frozenset[int]], b: list[frozenset[int]]) -> float:
    return round(sum(x == y for x, y in zip(a, b)) / len(a), 4)


def exactness(retriever, reference_vectors: np.ndarray | None, texts: list[str]) -> dict[str, float | int]:
    served = np.asarray(retriever.encode(texts), dtype=np.float32)
    corpus = np.asarray(retriever.corpus_vectors, dtype=np.float32)
    exact = top5_sets(served, corpus)
    _, rows = retriever.index.batch_search(served, 5)
    row = {"queries": len(texts), "search": same_share([frozenset(int(i) for i in r) for r in rows], exact)}
    if reference_vectors is not None:
        row["encoder"] = same_share(exact, top5_sets(reference_vectors, corpus))
        row["encoder_max_abs_diff"] = float(np.abs(served - reference_vectors).max())
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = Settings.from_env().with_(registry="full")
    every = [q.query for q in queries_for(settings)]
    texts = every[:args.queries]
    report: dict = {"cores": os.cpu_count(), "load_before": round(os.getloadavg()[0], 2), "retrievers": {}}
    rtp = baseline()
    for name, spec in EMBEDDING_MODELS.items():
        try:
            retriever, info = build_retriever(settings.with_(embedding_model=name))
        except EmbedInstallError as exc:
            report["retrievers"][name] = {"skipped": str(exc)}
            continue
        row = {"runtime": info.runtime, "index_source": info.source,
               "encode": timed(lambda text, retriever=retriever: retriever.encode([text]), texts),
               "rtp": timed(lambda text, retriever=retriever: rtp.retrieve(text, None, 5, retriever), texts)}
        reference_vectors = None
        if spec.source != "onnx_package":  # a sentence-transformers folder: its reference runtime in the same run
            reference = load_reference_encoder(name)
            row["sentence_transformers_encode"] = timed(
                lambda text, reference=reference: reference.encode_queries([text]), texts)
            row["encode_ratio"] = round(row["encode"]["p50_ms"] / row["sentence_transformers_encode"]["p50_ms"], 3)
            if info.runtime != "sentence-transformers":
                reference_vectors = reference.encode_queries(every)
        else:  # ONNX Runtime on each query alone: no batch, no padding
            reference_vectors = np.concatenate([retriever.encoder.encode_queries([text]) for text in every])
        row["exactness"] = exactness(retriever, reference_vectors, every)
        report["retrievers"][name] = row
    lexical = bm25_retriever(build_retriever(settings)[0].registry)
    report["retrievers"]["bm25"] = {"runtime": "bm25s", "encode": timed(lambda text: lexical.encode([text]), texts),
                                    "rtp": timed(lambda text: rtp.retrieve(text, None, 5, lexical), texts)}
    report["machine"] = {"cpu": next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                                      .splitlines() if line.startswith("model name")), "?"),
                         "avx512": " avx512f" in Path("/proc/cpuinfo").read_text()}
    report["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
