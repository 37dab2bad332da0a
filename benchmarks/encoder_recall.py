"""Does a faster query encoder keep RtP's recall? Recall@5 (api_list gold) per subset, each runtime vs numpy fp32.

Every runtime searches the same shipped registry vectors with the same index; only the query vectors differ.
The bound for making a runtime the default: within 0.002 of the fp32 numpy encoder on every subset.

    .venv/bin/python benchmarks/encoder_recall.py [--runtimes numpy,onnx] [--k 5] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.data.loaders import queries_for
from core.data.toolbench import SUBSETS
from core.retrieval.assemble import build_retriever, load_encoder
from core.retrieval.discovery import Retriever
from core.settings import Settings
from core.study.evaluate import evaluate_subset

BOUND = 0.002


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", default="numpy,onnx", help="the first is the reference")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = Settings.from_env()
    runtimes = args.runtimes.split(",")
    base, _ = build_retriever(settings, encoder=load_encoder(settings.embedding_model, runtimes[0]))
    recall: dict[str, dict[str, float]] = {}
    top_sets: dict[str, list[frozenset]] = {}
    for runtime in runtimes:
        retriever = Retriever(base.registry, load_encoder(settings.embedding_model, runtime), base.index)
        recall[runtime], top_sets[runtime] = {}, []
        for subset in SUBSETS:
            rows = evaluate_subset(settings, retriever, "rtp", subset, "api_list", [args.k])
            recall[runtime][subset] = rows[0]["recall"]
        texts = [q.query for q in queries_for(settings)]
        _, found = retriever.index.batch_search(retriever.encode(texts), args.k)
        top_sets[runtime] = [frozenset(r) for r in found.tolist()]
    reference = runtimes[0]
    report = {runtime: {"recall": recall[runtime],
                        "max_abs_delta": max(abs(recall[runtime][s] - recall[reference][s]) for s in SUBSETS),
                        "identical_top_sets": float(np.mean([a == b for a, b in
                                                             zip(top_sets[runtime], top_sets[reference])]))}
              for runtime in runtimes}
    for runtime in runtimes:
        report[runtime]["within_bound"] = report[runtime]["max_abs_delta"] <= BOUND
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{'runtime':<12}" + "".join(f"{s:>16}" for s in SUBSETS) + f"{'max |d|':>9}{'same top-k':>11}")
        for runtime, r in report.items():
            print(f"{runtime:<12}" + "".join(f"{r['recall'][s]:>16.4f}" for s in SUBSETS)
                  + f"{r['max_abs_delta']:>9.4f}{r['identical_top_sets']:>11.4f}")
    return 0 if all(r["within_bound"] for r in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
