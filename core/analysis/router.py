"""The adaptive router the paper proposed and left untested: RtP when RtP's own top-1 cosine is high, else PtR.

The idea: a high top-1 cosine means the registry holds an API that reads like the whole query (a
single-tool request, often naming a brand), where RtP wins; a low one suggests a multi-step
request that decomposition serves better. Routing costs nothing extra (RtP's retrieval runs
first anyway) and skips the discovery LLM call for every query sent to RtP.

Everything here is computed from stored per-query results of both architectures (columns
subset, query_id, rtp_recall, ptr_recall, rtp_top1), so no retrieval is rerun. The threshold is
fitted on training folds and applied to held-out queries, so the router's reported recall is
out of sample; fitting and scoring on the same queries would flatter it.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from core.analysis.router_fit import RouterFit
from core.data.toolbench import subset_order
from core.evaluation import significance

ALL = "all"
FOLDS, SEED = 5, 0  # the cross-validation: fixed, so every page and report shows the same split
ROUTER_NOTE = ("a query goes to PtR when RtP's top-1 cosine is below the threshold, else to RtP; the threshold is "
               f"fitted on {FOLDS - 1} of {FOLDS} folds and applied to the held-out one (stratified by subset), so "
               "router_recall is out of sample; share_to_ptr is the share of queries that need the discovery call; "
               "vs_best_single compares with the better fixed architecture on the same queries (Wilcoxon p); "
               "oracle_recall picks the better side per query and is an upper bound")
TABLE_COLUMNS = ["subset", "n", "rtp_recall", "ptr_recall", "router_recall", "oracle_recall", "share_to_ptr",
                 "best_single", "vs_best_single", "p_vs_best"]
CV_COLUMNS = ["subset", "query_id", "fold", "threshold", "to_ptr", "rtp_recall", "ptr_recall", "router_recall"]


def routed_recall(rtp_top1: np.ndarray, rtp_recall: np.ndarray, ptr_recall: np.ndarray,
                  threshold: float) -> np.ndarray:
    """Per-query recall of the routed system."""
    return np.where(rtp_top1 < threshold, ptr_recall, rtp_recall)


def candidate_thresholds(rtp_top1: np.ndarray) -> np.ndarray:
    """Every distinct split of the observed cosines, plus the two pure policies (all RtP, all PtR)."""
    return np.concatenate([[-np.inf], np.unique(rtp_top1), [np.inf]])


def fit_threshold(frame: pd.DataFrame) -> RouterFit:
    """The threshold with the best mean routed recall; ties go to the lowest (fewest discovery calls)."""
    top1, rtp, ptr = (frame[c].to_numpy(dtype=float) for c in ("rtp_top1", "rtp_recall", "ptr_recall"))
    thresholds = candidate_thresholds(top1)
    to_ptr = top1[None, :] < thresholds[:, None]  # [thresholds, queries]
    recalls = np.where(to_ptr, ptr[None, :], rtp[None, :]).mean(axis=1)
    best = int(np.flatnonzero(np.isclose(recalls, recalls.max(), rtol=0, atol=1e-12))[0])
    return RouterFit(float(thresholds[best]), float(recalls[best]), float(to_ptr[best].mean()), len(frame))


def threshold_curve(frame: pd.DataFrame, points: int = 61) -> pd.DataFrame:
    """Routed recall and share sent to PtR over a grid of thresholds spanning the observed cosines."""
    top1, rtp, ptr = (frame[c].to_numpy(dtype=float) for c in ("rtp_top1", "rtp_recall", "ptr_recall"))
    grid = np.linspace(top1.min(), top1.max() + 1e-6, points)
    return pd.DataFrame({"threshold": grid,
                         "recall": [routed_recall(top1, rtp, ptr, t).mean() for t in grid],
                         "share_to_ptr": [(top1 < t).mean() for t in grid]})


def fold_ids(frame: pd.DataFrame, folds: int, seed: int) -> np.ndarray:
    """Fold of each query, stratified by subset so every fold holds every subset in proportion."""
    rng = np.random.default_rng(seed)
    out = np.empty(len(frame), dtype=int)
    for _, rows in frame.groupby("subset", sort=True).indices.items():
        out[rows] = rng.permutation(np.arange(len(rows)) % folds)
    return out


def cross_validate(per_query: pd.DataFrame, folds: int = FOLDS, seed: int = SEED) -> pd.DataFrame:
    """Each query routed by a threshold fitted on the other folds (one row per query, CV_COLUMNS)."""
    frame = per_query.dropna(subset=["rtp_top1", "rtp_recall", "ptr_recall"]).reset_index(drop=True)
    fold = fold_ids(frame, folds, seed)
    if len(np.unique(fold)) < 2:  # nothing to train on for some held-out fold
        return pd.DataFrame(columns=CV_COLUMNS)
    threshold = np.empty(len(frame))
    for f in np.unique(fold):
        threshold[fold == f] = fit_threshold(frame[fold != f]).threshold
    to_ptr = frame["rtp_top1"].to_numpy(dtype=float) < threshold
    router = np.where(to_ptr, frame["ptr_recall"], frame["rtp_recall"]).astype(float)
    return frame[["subset", "query_id", "rtp_recall", "ptr_recall"]].assign(
        fold=fold, threshold=threshold, to_ptr=to_ptr, router_recall=router)[CV_COLUMNS]


def router_table(cv: pd.DataFrame) -> pd.DataFrame:
    """Per subset and over all queries: RtP, PtR, the cross-validated router, the per-query oracle.

    `vs_best_single` compares the router with the better fixed architecture over the same
    queries; `p_vs_best` is a two-sided Wilcoxon signed-rank test of that pairing (NaN when every
    pair is equal).
    """
    if cv.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    rows = []
    for subset, group in [*((s, cv[cv["subset"] == s]) for s in subset_order(cv["subset"])), (ALL, cv)]:
        rtp, ptr, router = (group[c].to_numpy(dtype=float) for c in ("rtp_recall", "ptr_recall", "router_recall"))
        best = rtp if rtp.mean() >= ptr.mean() else ptr
        diff = router - best
        p = significance.wilcoxon(router, best).pvalue if np.any(diff != 0) else math.nan
        rows.append({"subset": subset, "n": len(group), "rtp_recall": rtp.mean(), "ptr_recall": ptr.mean(),
                     "router_recall": router.mean(), "oracle_recall": np.maximum(rtp, ptr).mean(),
                     "share_to_ptr": float(group["to_ptr"].mean()),
                     "best_single": "rtp" if best is rtp else "ptr",
                     "vs_best_single": diff.mean(), "p_vs_best": p})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def top1_signal(per_query: pd.DataFrame) -> dict:
    """How much RtP's top-1 cosine says about which side wins: Spearman's rho with PtR − RtP recall."""
    frame = per_query.dropna(subset=["rtp_top1", "rtp_recall", "ptr_recall"])
    diff = frame["ptr_recall"] - frame["rtp_recall"]
    if len(frame) < 3 or frame["rtp_top1"].nunique() < 2 or diff.nunique() < 2:  # no rank correlation defined
        return {"spearman_rho": math.nan, "p": math.nan, "n": len(frame)}
    result = significance.spearmanr(frame["rtp_top1"], diff)
    return {"spearman_rho": result.statistic, "p": result.pvalue, "n": len(frame)}
