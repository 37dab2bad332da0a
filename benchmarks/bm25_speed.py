"""RtP per query on the full registry with BM25 (core/retrieval/lexical.py) beside the dense MiniLM, in one process.

    .venv/bin/python benchmarks/bm25_speed.py [--queries 100] [--k 5] [--repeats 3] [--json]

Each real query (spread over every subset) is searched alone, as the live query is: encode + search + merge through
the architecture's one retrieval, p50 and p95 over queries x repeats. The goal: BM25 RtP p50 <= 5 ms on 2 cores.
Also the build time of each, and RtP recall@5 on G1_instruction under both golds. Say the load beside every
figure: the two cores are shared.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.data.loaders import queries_for, registry_for
from core.retrieval.archs import arch
from core.retrieval.assemble import build_retriever
from core.retrieval.discovery import Retriever, clean_query
from core.retrieval.lexical import bm25_retriever
from core.settings import Settings
from core.study.evaluate import evaluate_subset

GOAL_P50_S = 0.005


def per_query_s(retriever: Retriever, texts: list[str], k: int, repeats: int) -> np.ndarray:
    """Seconds of each single-query RtP retrieval (after one warm-up pass)."""
    rtp = arch("rtp")
    for text in texts[:5]:
        rtp.retrieve(text, None, k, retriever)
    times = []
    for _ in range(repeats):
        for text in texts:
            start = time.perf_counter()
            rtp.retrieve(text, None, k, retriever)
            times.append(time.perf_counter() - start)
    return np.array(times)


def measure(n_queries: int, k: int, repeats: int) -> dict:
    settings = Settings.from_env()
    queries = queries_for(settings)
    texts = [clean_query(q.query) for q in queries[::max(1, len(queries) // n_queries)][:n_queries]]
    registry = registry_for(settings)
    start = time.perf_counter()
    retrievers = {"bm25": bm25_retriever(registry)}
    built = {"bm25": time.perf_counter() - start}
    start = time.perf_counter()
    retrievers["dense"] = build_retriever(settings, registry=registry)[0]
    built["dense"] = time.perf_counter() - start
    out: dict = {"registry": registry.name, "size": len(registry), "queries": len(texts), "k": k,
                 "load_before": os.getloadavg()[0]}
    for name, retriever in retrievers.items():
        times = per_query_s(retriever, texts, k, repeats)
        recall = {gold: evaluate_subset(settings, retriever, "rtp", "G1_instruction", gold, [5])[0]["recall"]
                  for gold in ("api_list", "relevant")}
        out[name] = {"model": retriever.encoder.model_id, "build_s": built[name],
                     "p50_ms": 1e3 * float(np.percentile(times, 50)), "p95_ms": 1e3 * float(np.percentile(times, 95)),
                     "g1_instruction_recall_at_5": recall}
    out["load_after"] = os.getloadavg()[0]
    out["bm25_meets_goal"] = out["bm25"]["p50_ms"] <= GOAL_P50_S * 1e3
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.queries, args.k, args.repeats)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"RtP per query, {result['queries']} queries x {args.repeats}, k={result['k']}, {result['registry']} "
              f"registry ({result['size']:,} APIs); load {result['load_before']:.2f} -> {result['load_after']:.2f}")
        for name in ("bm25", "dense"):
            r = result[name]
            recall = r["g1_instruction_recall_at_5"]
            print(f"  {name:<6} p50 {r['p50_ms']:6.2f} ms  p95 {r['p95_ms']:6.2f} ms  build {r['build_s']:5.2f} s  "
                  f"G1_instruction R@5 api_list {recall['api_list']:.4f} relevant {recall['relevant']:.4f}  "
                  f"({r['model']})")
        print(f"BM25 p50 goal <= {GOAL_P50_S * 1e3:g} ms: {'met' if result['bm25_meets_goal'] else 'NOT met'}")
    return 0 if result["bm25_meets_goal"] else 1


if __name__ == "__main__":
    sys.exit(main())
