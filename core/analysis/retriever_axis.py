"""The retriever axis's answer: does PtR's multi-tool gain hold under every retriever, or is it a crutch for a weak one?

Per discovery system, retriever and instruction subset: RtP, PtR and hybrid recall@k and PtR - RtP with its
percentile-bootstrap 95% interval over the paired per-query differences. A retriever-axis run's stubs come from the
main run it names (source_run_id), so the main study's own row (the retriever it searched with) is the baseline row
beside it, computed from that main run and its hybrid run. Pure functions over the reader's frames.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from core.study.catalog import MAIN_K
from core.analysis.model_size import describe, paired_difference, paper_rows

COLUMNS = ["model", "retriever", "source", "subset", "n", "rtp_recall", "ptr_recall", "hybrid_recall",
           "ptr_minus_rtp", "ptr_low", "ptr_high"]
NOTE = ("recall@5; intervals: percentile bootstrap (95%) of the mean paired per-query difference. Every row of a "
        "system searches the same stubs (its main study's run 0): only the retriever changes. all-mpnet-base-v2 "
        "stands in for the paper's gte-base (same size and dimension); it is not gte-base.")


def axis_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The latest complete retriever-axis run at k=5 per system, retriever, subset and architecture, and the main and
    hybrid runs they build on (kind main for RtP and PtR, kind hybrid for the hybrid), in id order."""
    complete = runs[runs["status"] == "complete"]
    axis = complete[(complete["kind"] == "retrievers") & (complete["k"] == MAIN_K)].sort_values("id")
    axis = axis.groupby(["backend_label", "embedding_model", "registry_hash", "subset", "arch"]).tail(1)
    sources = set(axis["source_run_id"].dropna().astype(int))
    mains = complete[complete["id"].isin(sources)]
    hybrids = complete[(complete["kind"] == "hybrid") & (complete["arch"] == "hybrid")
                       & complete["source_run_id"].isin(sources)].sort_values("id").groupby("source_run_id").tail(1)
    return pd.concat([axis, mains, hybrids]).drop_duplicates("id").sort_values("id")


def axis_table(runs: pd.DataFrame, rows: pd.DataFrame, gold: str = "api_list") -> pd.DataFrame:
    """COLUMNS: one row per system, retriever and subset (the main study's retriever first); `rows` are the per-query
    rows of axis_runs(runs) with subset, query_id and the recall columns."""
    column = f"recall_{gold}"
    by_id = runs.set_index("id")
    recall = rows.assign(system=rows["run_id"].map(by_id["backend_label"]),
                         retriever=rows["run_id"].map(by_id["embedding_model"]))
    out: list[dict] = []
    done: set[tuple[str, str, str]] = set()
    axis = runs[runs["kind"] == "retrievers"]
    for (_system, retriever, subset), part in axis.groupby(["backend_label", "embedding_model", "subset"]):
        setup = part.iloc[0]
        ids = {arch: int(part[part["arch"] == arch]["id"].iloc[-1]) for arch in part["arch"].unique()}
        sources = {arch: int(part[part["arch"] == arch]["source_run_id"].iloc[-1]) for arch in ("rtp", "ptr")
                   if arch in ids}
        hybrid_source = runs[(runs["kind"] == "hybrid") & (runs["source_run_id"] == sources.get("ptr"))]["id"]
        main_ids = {**sources, **({"hybrid": int(hybrid_source.iloc[-1])} if len(hybrid_source) else {})}
        main_retriever = by_id.loc[sources["rtp"], "embedding_model"] if "rtp" in sources else "?"
        for label, chosen, source in ((main_retriever, main_ids, "main study"), (retriever, ids, "retriever axis")):
            if (setup["backend_label"], label, subset) in done:  # the main study's row, once for all its retrievers
                continue
            done.add((setup["backend_label"], label, subset))
            frames = {arch: recall[recall["run_id"] == run_id].set_index("query_id")[column]
                      for arch, run_id in chosen.items()}
            if "rtp" not in frames or "ptr" not in frames:
                continue
            diff, low, high = paired_difference(frames["ptr"], frames["rtp"])
            out.append({"model": describe(setup.to_dict())[0], "retriever": label, "source": source,
                        "subset": subset, "n": int(frames["ptr"].index.intersection(frames["rtp"].index).size),
                        "rtp_recall": float(frames["rtp"].mean()), "ptr_recall": float(frames["ptr"].mean()),
                        "hybrid_recall": float(frames["hybrid"].mean()) if "hybrid" in frames else float("nan"),
                        "ptr_minus_rtp": diff, "ptr_low": low, "ptr_high": high})
    return pd.DataFrame(out, columns=COLUMNS).sort_values(
        ["model", "subset", "source", "retriever"], kind="stable").reset_index(drop=True)


PAPER_RETRIEVER = "thenlper/gte-base (paper)"


def paper_axis(paper: Mapping[str, Any]) -> pd.DataFrame:
    """COLUMNS for the paper's two discovery models under its one retriever (gte-base): point differences, no
    interval, no hybrid (the paper reports neither)."""
    rows = [{**{c: row.get(c, float("nan")) for c in COLUMNS}, "retriever": PAPER_RETRIEVER, "source": "paper",
             "hybrid_recall": float("nan")} for row in paper_rows(paper)]
    return pd.DataFrame(rows, columns=COLUMNS)


KSWEEP_COLUMNS = ["model", "retriever", "source", "subset", "arch", "k", "n", "recall"]


def axis_ksweep_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The latest complete retriever-axis run per system, retriever, subset, architecture and k, and the main study's
    own k sweep beside them: its run-0 ksweep runs built on the same main runs (source_run_id), in id order."""
    complete = runs[runs["status"] == "complete"]
    axis = complete[complete["kind"] == "retrievers"].sort_values("id")
    axis = axis.groupby(["backend_label", "embedding_model", "registry_hash", "subset", "arch", "k"]).tail(1)
    own = complete[(complete["kind"] == "ksweep") & (complete["run_index"] == 0)
                   & complete["source_run_id"].isin(set(axis["source_run_id"].dropna().astype(int)))]
    own = own.sort_values("id").groupby(["source_run_id", "arch", "k"]).tail(1)
    return pd.concat([axis, own]).sort_values("id")


def axis_ksweep_table(runs: pd.DataFrame, rows: pd.DataFrame, gold: str = "api_list") -> pd.DataFrame:
    """KSWEEP_COLUMNS: mean recall per system, retriever, subset, architecture and k; `rows` are the per-query rows of
    axis_ksweep_runs(runs) with the recall columns. The main study's retriever is labelled source "main study"."""
    if runs.empty:
        return pd.DataFrame(columns=KSWEEP_COLUMNS)
    means = rows.groupby("run_id")[f"recall_{gold}"].agg(["mean", "size"])
    out = [{"model": describe(run.to_dict())[0], "retriever": run["embedding_model"],
            "source": "retriever axis" if run["kind"] == "retrievers" else "main study", "subset": run["subset"],
            "arch": run["arch"], "k": int(run["k"]), "n": int(means.loc[run["id"], "size"]),
            "recall": float(means.loc[run["id"], "mean"])}
           for _, run in runs.iterrows() if run["id"] in means.index]
    return pd.DataFrame(out, columns=KSWEEP_COLUMNS).sort_values(
        ["model", "subset", "source", "retriever", "arch", "k"], kind="stable").reset_index(drop=True)
