"""PtR - RtP per registry, single-tool and multi-tool queries apart: the crossover's question asked of every
registry the store holds, for one discovery system, paired query by query."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from core.analysis.reader import ResultsReader
from core.evaluation.stats import bootstrap_ci
from core.registries import REGISTRY_LIST

COLUMNS = ["registry", "benchmark", "kind", "n", "rtp_recall", "ptr_recall", "mean_diff", "diff_low", "diff_high"]


def kind_of(subset: str) -> str:
    """ToolBench's G1 subsets and a query set's *single subsets are single-tool; the others multi-tool."""
    return "single" if subset.startswith("G1") or subset.endswith("single") else "multi"


def registry_gains(url: str, system: str = "offline", k: int = 5, gold: str = "api_list",
                   cache_dir: Path | None = None) -> pd.DataFrame:
    """One row per registry with a stored main study of `system` and per kind: paired PtR - RtP recall@k (mean
    over runs per query) with a bootstrap 95% interval over queries."""
    rows = []
    for declared in REGISTRY_LIST:
        per_query = ResultsReader(url, cache_dir, declared.name).per_query(None, gold, k, system)
        if per_query.empty:
            continue
        per_query = per_query.assign(kind=per_query["subset"].map(kind_of))
        for kind in ("single", "multi"):
            part = per_query[per_query["kind"] == kind]
            if part.empty:
                continue
            low, high = bootstrap_ci(part["recall_diff"].tolist())
            rows.append({"registry": declared.name, "benchmark": declared.benchmark, "kind": kind, "n": len(part),
                         "rtp_recall": float(part["rtp_recall"].mean()), "ptr_recall": float(part["ptr_recall"].mean()),
                         "mean_diff": float(part["recall_diff"].mean()), "diff_low": low, "diff_high": high})
    return pd.DataFrame(rows, columns=COLUMNS)
