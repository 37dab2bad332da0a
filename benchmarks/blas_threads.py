"""How the number of OpenBLAS threads moves the dashboard's BLAS calls, in this process, on this machine's load.

    .venv/bin/python benchmarks/blas_threads.py [--repeats 7] [--json]

Times, with OpenBLAS's default threads and with one (app.py's setting), the Registry map's PCA (eigh of a
384 x 384 covariance, ui/projection.py) and float32 search scores against a registry-sized matrix (47,000 x 384,
core/retrieval/prefilter.FloatScores) for 1 and 5 queries. The matrices are random: BLAS's time depends on their
shapes only. Say the machine's load beside every figure: OpenBLAS's waiting threads spin, so the gap grows with it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

REGISTRY, DIM, MAP_SAMPLE = 47_000, 384, 5_000


def median_s(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(repeats: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((REGISTRY, DIM)).astype(np.float32)
    sample = rng.standard_normal((MAP_SAMPLE, DIM))
    covariance = (sample - sample.mean(axis=0)).T @ (sample - sample.mean(axis=0))
    calls = {"map_eigh": lambda: np.linalg.eigh(covariance), "scores_1_query": lambda: vectors[:1] @ vectors.T,
             "scores_5_queries": lambda: vectors[:5] @ vectors.T}
    default = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    out: dict[str, dict[str, float]] = {}
    for name, call in calls.items():
        call()  # warm-up
        with threadpool_limits(limits=default, user_api="blas"):
            many = median_s(call, repeats)
        with threadpool_limits(limits=1, user_api="blas"):
            one = median_s(call, repeats)
        out[name] = {f"threads_{default}_s": many, "threads_1_s": one, "ratio_default_to_one": many / one}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    result = measure(args.repeats)
    if args.json:
        print(json.dumps({"load_1min_before": load, **result}, indent=1))
        return
    print(f"load (1 min) before: {load:.2f}")
    for name, row in result.items():
        print(f"{name:18s} " + "  ".join(f"{key} {value:.4f}" for key, value in row.items()))


if __name__ == "__main__":
    main()
