"""The retriever axis's speed: query encoding and RtP per retriever on the full registry, in one process (issue 35).

    nice -n 10 .venv/bin/python benchmarks/retriever_speed.py [--queries 100] [--json]

For each installed declared embedding model and BM25: p50 / p95 milliseconds of encoding one query (the encoder the
lab serves it with), beside sentence-transformers' for the same model where it can load the model (every model
shipped as a sentence-transformers folder), and RtP's p50 / p95 (encode + search of the full registry, as the
Inspector calls it). Each figure is timed on the same queries, one at a time, after a warm-up; the load is printed.
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

from core.data.loaders import queries_for  # noqa: E402
from core.embedding_models import EMBEDDING_MODELS  # noqa: E402
from core.retrieval.archs import baseline  # noqa: E402
from core.retrieval.assemble import build_retriever, load_reference_encoder  # noqa: E402
from core.retrieval.embed_install import EmbedInstallError  # noqa: E402
from core.retrieval.lexical import bm25_retriever  # noqa: E402
from core.settings import Settings  # noqa: E402


def timed(call, items: list[str]) -> dict[str, float]:
    call(items[0])  # warm
    seconds = []
    for item in items:
        start = time.perf_counter()
        call(item)
        seconds.append(time.perf_counter() - start)
    return {"p50_ms": round(1000 * statistics.median(seconds), 2),
            "p95_ms": round(1000 * float(np.percentile(seconds, 95)), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = Settings.from_env().with_(registry="full")
    texts = [q.query for q in queries_for(settings)][:args.queries]
    report: dict = {"cores": os.cpu_count(), "load_before": round(os.getloadavg()[0], 2), "retrievers": {}}
    rtp = baseline()
    for name, spec in EMBEDDING_MODELS.items():
        try:
            retriever, info = build_retriever(settings.with_(embedding_model=name))
        except EmbedInstallError as exc:
            report["retrievers"][name] = {"skipped": str(exc)}
            continue
        row = {"runtime": info.runtime, "index_source": info.source,
               "encode": timed(lambda text: retriever.encode([text]), texts),
               "rtp": timed(lambda text: rtp.retrieve(text, None, 5, retriever), texts)}
        if spec.source != "onnx_package":  # a sentence-transformers folder: its reference runtime in the same run
            reference = load_reference_encoder(name)
            row["sentence_transformers_encode"] = timed(lambda text: reference.encode_queries([text]), texts)
            row["encode_ratio"] = round(row["encode"]["p50_ms"] / row["sentence_transformers_encode"]["p50_ms"], 3)
        report["retrievers"][name] = row
    lexical = bm25_retriever(build_retriever(settings)[0].registry)
    report["retrievers"]["bm25"] = {"runtime": "bm25s", "encode": timed(lambda text: lexical.encode([text]), texts),
                                    "rtp": timed(lambda text: rtp.retrieve(text, None, 5, lexical), texts)}
    report["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
