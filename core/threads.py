"""The thread policy of every process (dashboard, CLI, studies): one OpenBLAS thread, ONNX Runtime without spinning.

On 2 shared cores, a pool whose idle threads spin steals the core that the next call needs. OpenBLAS's did: a
384 x 384 eigh for the Registry map took 1.6-2.7 s instead of 0.04 s, a 5-query search twice as long
(benchmarks/blas_threads.py). ONNX Runtime's did too: with the other core busy, a query's encode took 31.9 ms on
2 spinning threads and 15.9 ms on 2 that sleep (RtP 35.7 vs 18.0 ms; 12.5 vs 12.8 ms with both cores free; 1 thread
was no faster either way: benchmarks/thread_policy.py, docs/benchmarks.md). Every ONNX Runtime session is made by
inference_session, and `python -m core perf` reports what each pool ran with (thread_report).
"""
from __future__ import annotations

import os
import sys
from typing import Any

SPINNING = "session.intra_op.allow_spinning"
ORT_SPINNING = "0"  # SPINNING for every session


def one_blas_thread() -> None:
    import numpy  # noqa: F401 - threadpoolctl limits the BLAS libraries already loaded
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def session_options(threads: int | None = None) -> Any:
    """ONNX Runtime's options for one session: `threads` intra-op threads (default: every core), one inter-op
    thread, and idle threads that sleep instead of spinning."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or cores()
    options.inter_op_num_threads = 1
    options.add_session_config_entry(SPINNING, ORT_SPINNING)
    return options


def inference_session(model: str | bytes, threads: int | None = None) -> Any:
    """An ONNX Runtime session on the CPU over a graph file's path or a serialised graph, made by session_options."""
    import onnxruntime as ort

    return ort.InferenceSession(model, session_options(threads), providers=["CPUExecutionProvider"])


def thread_report() -> dict[str, Any]:
    """What each thread pool in this process runs with: BLAS libraries and OpenMP runtimes (threadpoolctl), ONNX
    Runtime's policy, torch's threads when torch is loaded, and the CPU's vector extensions that pick the kernels."""
    from threadpoolctl import threadpool_info

    pools = threadpool_info()
    options = session_options()
    report: dict[str, Any] = {
        "cores": cores(),
        "blas": [{"library": info.get("internal_api"), "threads": info.get("num_threads"),
                  "kernel": info.get("architecture")} for info in pools if info.get("user_api") == "blas"],
        "openmp": [{"library": info.get("internal_api"), "threads": info.get("num_threads")}
                   for info in pools if info.get("user_api") == "openmp"],  # torch's, once loaded
        "onnxruntime": {"intra_op_threads": options.intra_op_num_threads,
                        "inter_op_threads": options.inter_op_num_threads,
                        "spinning": options.get_session_config_entry(SPINNING) == "1"},
        "cpu_flags": cpu_flags(),
    }
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        report["torch"] = {"threads": torch.get_num_threads(), "interop_threads": torch.get_num_interop_threads()}
    return report


def cpu_flags() -> list[str]:
    """The vector extensions that decide the kernels here (AVX2, AVX-512, VNNI), from /proc/cpuinfo; [] elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            flags = next((line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")), [])
    except OSError:
        return []
    return sorted(set(flags) & {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "fma"})
