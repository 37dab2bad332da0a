"""PtR - RtP (and hybrid - RtP) per registry, single-tool and multi-tool queries apart: the crossover's question
asked of every registry the store holds, for each discovery system, paired query by query."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from core.analysis.paper import main_points
from core.analysis.reader import ResultsReader
from core.evaluation.stats import bootstrap_ci
from core.registries import REGISTRY_LIST

COLUMNS = ["registry", "benchmark", "kind", "n", "rtp_recall", "ptr_recall", "mean_diff", "diff_low", "diff_high",
           "hybrid_n", "hybrid_recall", "hybrid_diff", "hybrid_low", "hybrid_high"]
PAPER_KINDS = {"single": ("G1_instruction",), "multi": ("G2_instruction", "G3_instruction")}


def kind_of(subset: str) -> str:
    """ToolBench's G1 subsets and a query set's *single subsets are single-tool; the others multi-tool."""
    return "single" if subset.startswith("G1") or subset.endswith("single") else "multi"


def _paired(diffs: pd.Series) -> tuple[float, float, float]:
    low, high = bootstrap_ci(diffs.tolist())
    return float(diffs.mean()), low, high


def registry_gains(url: str, system: str = "offline", k: int = 5, gold: str = "api_list",
                   cache_dir: Path | None = None) -> pd.DataFrame:
    """One row per registry with a stored main study of `system` and per kind: paired PtR - RtP recall@k (mean
    over runs per query) with a bootstrap 95% interval over queries, and hybrid - RtP on the queries the hybrid
    study holds (NaN where it has none)."""
    rows = []
    for declared in REGISTRY_LIST:
        reader = ResultsReader(url, cache_dir, declared.name)
        per_query = reader.per_query(None, gold, k, system)
        if per_query.empty:
            continue
        hybrid = reader.hybrid_per_query(gold, system) if k == 5 else pd.DataFrame()
        per_query = per_query.assign(kind=per_query["subset"].map(kind_of))
        if not hybrid.empty:
            per_query = per_query.merge(hybrid[["subset", "query_id", "hybrid_recall"]], on=["subset", "query_id"],
                                        how="left")
        else:
            per_query = per_query.assign(hybrid_recall=float("nan"))
        for kind in ("single", "multi"):
            part = per_query[per_query["kind"] == kind]
            if part.empty:
                continue
            both = part.dropna(subset=["hybrid_recall"])
            hybrid_stats = _paired(both["hybrid_recall"] - both["rtp_recall"]) if len(both) else (float("nan"),) * 3
            rows.append({"registry": declared.name, "benchmark": declared.benchmark, "kind": kind, "n": len(part),
                         "rtp_recall": float(part["rtp_recall"].mean()), "ptr_recall": float(part["ptr_recall"].mean()),
                         **dict(zip(("mean_diff", "diff_low", "diff_high"), _paired(part["recall_diff"]))),
                         "hybrid_n": len(both),
                         "hybrid_recall": float(both["hybrid_recall"].mean()) if len(both) else float("nan"),
                         **dict(zip(("hybrid_diff", "hybrid_low", "hybrid_high"), hybrid_stats))})
    return pd.DataFrame(rows, columns=COLUMNS)


def paper_gains(paper: dict) -> pd.DataFrame:
    """The paper's ToolBench PtR - RtP recall@5 (Gemini 2.5 Flash, gte-base) per kind: G1 for single, G2 and G3 for
    multi pooled by their query counts; no intervals (the paper reports none for the difference)."""
    points = main_points(paper)
    recall = points[points["metric"] == "recall"].pivot_table(index="subset", columns="arch", values="mean")
    counts = {f"{g}_instruction": n for g, n in (paper.get("setup") or {}).get("subsets", {}).items()}
    rows = []
    for kind, subsets in PAPER_KINDS.items():
        present = [s for s in subsets if s in recall.index and s in counts]
        if not present:
            continue
        n = sum(counts[s] for s in present)
        diff = sum((recall.loc[s, "ptr"] - recall.loc[s, "rtp"]) * counts[s] for s in present) / n
        rows.append({"kind": kind, "n": n, "mean_diff": float(diff),
                     "subsets": ", ".join(f"{s.split('_')[0]} {recall.loc[s, 'ptr'] - recall.loc[s, 'rtp']:+.3f}"
                                          for s in present)})
    return pd.DataFrame(rows, columns=["kind", "n", "mean_diff", "subsets"])


def systems_on_registries(url: str, cache_dir: Path | None = None) -> list[str]:
    """The systems with a complete main study on any registry (ToolBench's documented one counts as ToolBench),
    those stored on the most registries first."""
    from core.analysis.store_summary import StoreSummary

    summary = StoreSummary(url, cache_dir)
    counts: dict[str, int] = {}
    for name in sorted({d.study_registry for d in REGISTRY_LIST}):
        for system in summary.systems(name):
            counts[system] = counts.get(system, 0) + 1
    return sorted(counts, key=lambda s: (-counts[s], s))
