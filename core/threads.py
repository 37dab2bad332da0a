"""One OpenBLAS thread per process, for the dashboard and the CLI alike.

OpenBLAS's threads wait for each other by spinning: beside the query encoder's ONNX threads, a local model and
the browser on 2 cores, a 384 x 384 eigh for the Registry map took 1.6-2.7 s instead of 0.04 s, a 5-query search
twice as long (benchmarks/blas_threads.py), and RtP on a 4,076-API registry (float32 scores through BLAS) took
1.6x its time on ToolBench's 47,038 (int8 scores through ONNX Runtime) until this was set (docs/benchmarks.md).
"""
from __future__ import annotations


def one_blas_thread() -> None:
    import numpy  # noqa: F401 - threadpoolctl limits the BLAS libraries already loaded
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
