"""The committed index benchmark (data/index_scale.json, written by `python -m core index-scale`) as tables.

Sizes above the real registry are its real APIs plus SYNTHETIC distractor vectors: every table keeps a
`registry` column that says so, and the caption repeats it with the measurement's provenance.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

INDEX_SCALE_FILE = Path("data") / "index_scale.json"  # under the project root
INDEX_COLUMNS = ["size", "registry", "index", "params", "build_s", "memory_mb", "p50_ms", "p95_ms", "batch_qps",
                 "recall_at_5_vs_exact", "load_1m"]
SWEEP_COLUMNS = ["size", "registry", "index", "parameter", "value", "p50_ms", "p95_ms", "recall_at_5_vs_exact"]
EVIDENCE_COLUMNS = ["measure", "population", "p05", "p25", "p50", "p75", "p95", "ks"]


def load_index_scale(root: Path) -> dict[str, Any] | None:
    """The benchmark's JSON under `root`, or None when it has not been run there."""
    path = root / INDEX_SCALE_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def _registry(row: dict[str, Any]) -> str:
    added = int(row.get("synthetic_distractors") or 0)
    return f"real + {added:,} synthetic distractors" if added > 0 else "real"


def index_table(report: dict[str, Any]) -> pd.DataFrame:
    """One row per size and index: build, memory, latency, throughput, recall@5 against exact search, load."""
    rows = [{"size": r["size"], "registry": _registry(r), "index": r["index"],
             "params": ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "exact",
             "build_s": r["build_s"], "memory_mb": r["memory_mb"], "p50_ms": r["p50_ms"], "p95_ms": r["p95_ms"],
             "batch_qps": r["batch_qps"], "recall_at_5_vs_exact": r["recall_at_5_vs_exact"],
             "load_1m": r["load_before"]["1m"]} for r in report.get("rows", [])]
    return pd.DataFrame(rows, columns=INDEX_COLUMNS)


def sweep_table(report: dict[str, Any]) -> pd.DataFrame:
    """The ANN indexes over their search-time parameter (HNSW_EF_SEARCH, IVF_NPROBE) at each size."""
    rows = []
    for r in report.get("rows", []):
        for point in r.get("sweep", []):
            name = next(k for k in point if k.startswith(("hnsw_", "ivf_")))
            rows.append({"size": r["size"], "registry": _registry(r), "index": r["index"], "parameter": name,
                         "value": point[name], "p50_ms": point["p50_ms"], "p95_ms": point["p95_ms"],
                         "recall_at_5_vs_exact": point["recall_at_5_vs_exact"]})
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def evidence_table(report: dict[str, Any]) -> pd.DataFrame:
    """How the distractors compare with real vectors: cosine quantiles of both populations, KS statistic."""
    check = (report.get("distractors") or {}).get("check")
    if not check:
        return pd.DataFrame(columns=EVIDENCE_COLUMNS)
    measures = {"nn_cosine": ("nearest real API's cosine", ("real_leave_one_out", "synthetic_to_real")),
                "query_top1": ("a test query's best cosine", ("real_non_gold", "synthetic")),
                "query_top5": ("a test query's 5th best cosine", ("real_non_gold", "synthetic"))}
    rows = [{"measure": label, "population": population.replace("_", " "), **check[key][population],
             "ks": check[key]["ks"]} for key, (label, populations) in measures.items() for population in populations]
    return pd.DataFrame(rows, columns=EVIDENCE_COLUMNS)


def provenance_fields(report: dict[str, Any]) -> dict[str, Any]:
    """What every export of these tables carries."""
    p = report.get("provenance", {})
    return {"benchmark": "python -m core index-scale", "label": report.get("label"),
            "commit": str(p.get("commit"))[:10],
            "seed": p.get("seed"), "queries": p.get("queries"), "k": report.get("k"),
            "registry": f"{p.get('registry')} ({p.get('registry_size', 0):,} APIs)",
            "embedding_model": p.get("embedding_model"), "cpus": (p.get("machine") or {}).get("cpus"),
            "started": p.get("started")}


def caption(report: dict[str, Any]) -> str:
    """One paragraph: what was measured, on what, and the synthetic label."""
    p = report.get("provenance", {})
    loads = [r["load_before"]["1m"] for r in report.get("rows", [])]
    share = ((report.get("distractors") or {}).get("check") or {}).get("synthetic_share_of_top5_at_1_to_1")
    return (f"{report.get('label', '')}. recall@{report.get('k')} is against exact search on the "
            f"{p.get('queries')} test queries; latency is one query at a time, throughput in batches of "
            f"{p.get('batch')}. {(p.get('machine') or {}).get('cpus')} CPUs, 1-minute load "
            f"{min(loads, default=0):.2f}–{max(loads, default=0):.2f} during the runs; commit "
            f"{str(p.get('commit'))[:10]}, seed {p.get('seed')}, faiss {p.get('faiss')}."
            + (f" At one distractor per real API, distractors take {share:.0%} of the test queries' top 5 among "
               "non-gold APIs (0.5 would be indistinguishable from real APIs)." if share is not None else ""))
