"""The thread policy and the search kernels, measured (issue 36): what core.threads and core.retrieval.prefilter chose.

    .venv/bin/python benchmarks/thread_policy.py [--queries 150] [--json]

1. Thread pools. The default query encoder (ONNX Runtime) and RtP on the full registry, p50 of one query at a
   time, for each ONNX Runtime policy (2 or 1 intra-op threads; idle threads spinning or asleep), with both cores
   free and with one of them kept busy by a spinning child process (a shared machine). Each policy runs in a fresh
   interpreter, so that no pool of one run is left beside the next.
2. Search kernels. One query at a time over the full registry's vectors: numpy's exact top 5 (the baseline, in the
   same process), the float32 BLAS prefilter, and the int8 prefilter with each code range whose GEMM is exact on
   this CPU (+-127 needs VNNI; +-64 is what an AVX2-only CPU gets), each checked for the same top 5 as numpy.

The machine's load is printed beside each figure: a loaded machine lengthens every time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POLICIES = ((2, "1"), (2, "0"), (1, "1"), (1, "0"))  # (intra-op threads, allow_spinning)

CHILD = r"""
import json, os, statistics, sys, time
threads, spin, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
import core.threads as policy
real = policy.session_options
def options(requested=None):
    chosen = real(requested)
    if requested is None:  # the query encoder's session; the prefilter's single-query session keeps its 1 thread
        chosen.intra_op_num_threads = threads
    chosen.add_session_config_entry("session.intra_op.allow_spinning", spin)
    return chosen
policy.session_options = options
import core.retrieval.bert_onnx, core.retrieval.onnx_file, core.retrieval.prefilter
for module in (core.retrieval.bert_onnx, core.retrieval.onnx_file, core.retrieval.prefilter):
    module.session_options = options
policy.one_blas_thread()
from core.data.loaders import queries_for
from core.retrieval.archs import baseline
from core.retrieval.assemble import build_retriever, load_encoder
from core.settings import Settings
settings = Settings.from_env(env={"LLM_BACKEND": "offline"})
encoder = load_encoder(settings.embedding_model, "auto", settings.cache_dir)
retriever, _ = build_retriever(settings, encoder=encoder)
texts = [q.query for q in queries_for(settings)][:n]
def p50(call):
    for text in texts[:10]:
        call(text)
    times = []
    for text in texts:
        start = time.perf_counter(); call(text); times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000
print(json.dumps({"encode_p50_ms": p50(lambda t: encoder.encode_queries([t])),
                  "rtp_p50_ms": p50(lambda t: baseline().retrieve(t, None, 5, retriever)),
                  "load": os.getloadavg()[0]}))
"""


def policy_runs(n: int) -> list[dict]:
    rows = []
    for busy in (False, True):
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            for threads, spin in POLICIES:
                out = subprocess.run([sys.executable, "-c", CHILD, str(threads), spin, str(n)], cwd=ROOT,
                                     capture_output=True, text=True, check=True, env={**os.environ,
                                                                                      "PYTHONPATH": str(ROOT)})
                rows.append({"other core": "busy" if busy else "free", "threads": threads,
                             "spinning": spin == "1", **json.loads(out.stdout.strip().splitlines()[-1])})
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    return rows


def kernel_runs(n: int) -> list[dict]:
    import core.retrieval.prefilter as prefilter
    from core.data.loaders import queries_for
    from core.retrieval.assemble import build_retriever
    from core.retrieval.index import VectorIndex
    from core.settings import Settings
    from core.threads import one_blas_thread

    one_blas_thread()
    settings = Settings.from_env(env={"LLM_BACKEND": "offline"})
    retriever, _ = build_retriever(settings)
    vectors = retriever.index.vectors
    queries = retriever.encoder.encode_queries([q.query for q in queries_for(settings)][:n])

    def numpy_top5(q: np.ndarray) -> np.ndarray:
        scores = vectors @ q
        part = np.argpartition(-scores, 5)[:5]
        return part[np.argsort(-scores[part])]

    def p50(call) -> float:
        for q in queries[:10]:
            call(q)
        times = []
        for q in queries:
            start = time.perf_counter()
            call(q)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000

    reference = [set(numpy_top5(q).tolist()) for q in queries]
    rows = [{"kernel": "numpy exact (baseline)", "p50_ms": p50(numpy_top5), "exact_top5": 1.0}]
    choices: list[tuple[str, int | None]] = [("float32 BLAS prefilter", None)]
    choices += [(f"int8 prefilter, codes +-{limit}", limit) for limit in prefilter.CODE_LIMITS
                if prefilter._gemm_exact(limit)]
    chosen = prefilter.exact_code_limit()
    for name, limit in choices:
        saved = prefilter.exact_code_limit, prefilter.INT8_MIN_ROWS
        prefilter.exact_code_limit = lambda limit=limit: limit
        prefilter.INT8_MIN_ROWS = 0 if limit else 10 ** 12
        try:
            index = VectorIndex(vectors)
        finally:
            prefilter.exact_code_limit, prefilter.INT8_MIN_ROWS = saved
        same = np.mean([set(index.search(q, 5)[1].tolist()) == ref for q, ref in zip(queries, reference)])
        rows.append({"kernel": name + (" (chosen here)" if limit == chosen else ""), "p50_ms": p50(
            lambda q, index=index: index.search(q, 5)), "exact_top5": float(same)})
    base = rows[0]["p50_ms"]
    for row in rows:
        row["vs_numpy"] = base / row["p50_ms"]
        row["load"] = os.getloadavg()[0]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from core.threads import cpu_flags

    report = {"cpu_flags": cpu_flags(), "policies": policy_runs(args.queries), "kernels": kernel_runs(args.queries)}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print("CPU:", " ".join(report["cpu_flags"]))
    for row in report["policies"]:
        print(f"other core {row['other core']:4}  {row['threads']} thread(s), spinning {str(row['spinning']):5}  "
              f"encode p50 {row['encode_p50_ms']:6.2f} ms  RtP p50 {row['rtp_p50_ms']:6.2f} ms  load {row['load']:.2f}")
    for row in report["kernels"]:
        print(f"{row['kernel']:42} p50 {row['p50_ms']:6.3f} ms  {row['vs_numpy']:5.2f}x numpy  "
              f"top-5 exact {row['exact_top5']:.0%}  load {row['load']:.2f}")


if __name__ == "__main__":
    main()
