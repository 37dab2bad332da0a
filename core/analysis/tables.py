"""The study's analyses: pure functions over per-query rows and per-run means (pandas frames).

Per-query frames carry the columns `core.analysis.reader` reads from the store: subset, query_id, arch,
run_index, k, recall_/precision_/plan_pass_{api_list,relevant}, top1_score, search_width,
rtp_overlap, same_as_rtp, the plan columns (plan_refusal, plan_parse_error, plan_steps,
plan_apis_named, plan_fidelity, plan_selection_rate, plan_matched), stub columns (n_stubs,
stub_names, stub_fallback, stub_top1 = [(cosine, gold api_list, gold relevant)]), token columns,
sub_size and sub_seed.

Conventions, stated once: every metric is averaged over queries within a run first, then over
runs (mean and sample std, ddof=1; one run gives std 0). The aggregate tables (main_table,
ksweep_table, scaling_table, divergence, trajectory) therefore take per-run means, each declared
once in `core.evaluation.run_means` (its per-query value in Python and in SQL) and computed by the read
API in SQL. Undefined per-query values (recall with an empty gold set, fidelity of an empty
selection) are skipped. "pass_rate_proxy" is the proxy defined in `PASS_RATE_DEFINITION` below,
never ToolBench's judged pass rate.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.analysis.provenance import PROVENANCE_FIELDS
from core.evaluation import significance
from core.evaluation.stats import bootstrap_ci, summarise
from core.data.toolbench import gold_definition, subset_order

EPS = 1e-12
OUTCOMES = ("rtp_wins", "ptr_wins", "tie", "both_miss")
NO_VARIANCE = "n/a (no variance across runs)"
TOO_FEW_RUNS = "n/a (fewer than 2 runs)"
ONE_SAMPLE = "one-sample t (PtR run means vs deterministic RtP)"
TWO_SAMPLE = "two-sample t (run means)"
MAIN_METRICS = ("recall", "precision", "pass_rate_proxy")
PASS_RATE_LABEL = "pass-rate proxy"
PASS_RATE_DEFINITION = ("pass-rate proxy: the planner did not refuse, its reply parsed, and it selected at least one "
                        "gold API. Not ToolBench's LLM-judged pass rate, which cannot be reproduced here.")


@dataclass(frozen=True)
class TestResult:
    p_value: float
    test: str
    statistic: float = math.nan


def metric_column(metric: str, gold: str) -> str:
    """The per-query column behind a metric name under one gold definition."""
    name = "plan_pass" if metric == "pass_rate_proxy" else metric
    return gold_definition(gold).column(name)


def compare_to_constant(sample: Sequence[float], constant: float) -> TestResult:
    """One-sample t-test of run means against a deterministic value; n/a when it cannot be computed.

    With zero spread the t-test (like scipy's) returns p = 0 (t = inf), which would claim certainty
    from identical runs; we report NaN and say why instead.
    """
    values = np.asarray([v for v in sample if not math.isnan(v)], dtype=float)
    if len(values) < 2:
        return TestResult(math.nan, TOO_FEW_RUNS)
    if np.std(values) < EPS:
        return TestResult(math.nan, NO_VARIANCE)
    res = significance.ttest_1samp(values, constant)
    return TestResult(float(res.pvalue), ONE_SAMPLE, float(res.statistic))


def compare_samples(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Student's two-sample t-test over run means; n/a when both samples have no spread."""
    x = np.asarray([v for v in a if not math.isnan(v)], dtype=float)
    y = np.asarray([v for v in b if not math.isnan(v)], dtype=float)
    if len(x) < 2 or len(y) < 2:
        return TestResult(math.nan, TOO_FEW_RUNS)
    if np.std(x) < EPS and np.std(y) < EPS:
        return TestResult(math.nan, NO_VARIANCE)
    res = significance.ttest_ind(x, y)
    return TestResult(float(res.pvalue), TWO_SAMPLE, float(res.statistic))


def better(rtp: float, ptr: float) -> str:
    if math.isnan(rtp) or math.isnan(ptr) or abs(rtp - ptr) < EPS:
        return "tie"
    return "rtp" if rtp > ptr else "ptr"


def over_runs(per_run: pd.DataFrame, columns: Sequence[str], by: Sequence[str]) -> pd.DataFrame:
    """Mean and sample std (ddof=1; 0 for a single run, as core.evaluation.stats.summarise) of run means: by +
    {col}_mean + {col}_std + runs + n_queries (the most queries any run had). Plain Python: per-run
    frames have tens of rows, where pandas' groupby costs more than the arithmetic."""
    by = list(by)
    out_cols = [*by, *(f"{c}_{s}" for c in columns for s in ("mean", "std")), "runs", "n_queries"]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for record in per_run[[*by, *columns, "n"]].to_dict("records") if not per_run.empty else []:
        groups[tuple(record[b] for b in by)].append(record)
    rows = []
    for key in sorted(groups):
        records = groups[key]
        row: dict = dict(zip(by, key))
        for col in columns:
            s = summarise(r[col] for r in records if r[col] is not None and not math.isnan(r[col]))
            row[f"{col}_mean"], row[f"{col}_std"] = s.mean, s.std
        row["runs"], row["n_queries"] = len(records), int(max(r["n"] for r in records))
        rows.append(row)
    return pd.DataFrame(rows, columns=out_cols)


def main_table(per_run: pd.DataFrame, gold: str = "api_list") -> pd.DataFrame:
    """subset x metric: RtP and PtR mean±std over runs, p-value and test name, better side, sizes.

    Recall and precision: RtP's retrieval is deterministic, so PtR's run means are tested against
    RtP's value (one-sample); if RtP's run means ever differ, a two-sample test is used instead.
    The pass-rate proxy varies on both sides (the planner runs per run): two-sample.
    """
    columns = ["subset", "metric", "rtp_mean", "rtp_std", "ptr_mean", "ptr_std", "p_value", "test", "better",
               "n_queries", "runs"]
    cols = {metric: metric_column(metric, gold) for metric in MAIN_METRICS}
    rows = []
    for subset, part in per_run.groupby("subset", sort=True) if not per_run.empty else []:
        rtp_part, ptr_part = part[part["arch"] == "rtp"], part[part["arch"] == "ptr"]
        if rtp_part.empty or ptr_part.empty:
            continue
        for metric, col in cols.items():
            rtp = [float(v) for v in rtp_part[col].tolist() if v is not None and not math.isnan(v)]
            ptr = [float(v) for v in ptr_part[col].tolist() if v is not None and not math.isnan(v)]
            if not rtp or not ptr:
                continue
            r, p = summarise(rtp), summarise(ptr)
            deterministic = metric != "pass_rate_proxy" and (max(rtp) - min(rtp)) < EPS
            test = compare_to_constant(ptr, r.mean) if deterministic else compare_samples(rtp, ptr)
            rows.append({"subset": subset, "metric": metric, "rtp_mean": r.mean, "rtp_std": r.std,
                         "ptr_mean": p.mean, "ptr_std": p.std, "p_value": test.p_value, "test": test.test,
                         "better": better(r.mean, p.mean), "n_queries": _queries_behind(part, metric),
                         "runs": min(r.n, p.n)})
    return pd.DataFrame(rows, columns=columns)


def _queries_behind(part: pd.DataFrame, metric: str) -> int:
    """Queries behind a main-table mean: every query for retrieval, the planned ones for the pass rate (a planner
    sample plans fewer; without an n_planned column every row is taken as planned)."""
    column = "n_planned" if metric == "pass_rate_proxy" and "n_planned" in part else "n"
    return int(part[column].max())


def outcome(rtp: float, ptr: float, wins: tuple[str, str] = ("rtp_wins", "ptr_wins")) -> str:
    """Per-query comparison of recall: both_miss when both are 0, tie when equal, else the winner, named by `wins`
    (the first side's, the second's: core.analysis.compare names them a_wins and b_wins)."""
    if rtp < EPS and ptr < EPS:
        return "both_miss"
    if abs(rtp - ptr) < EPS:
        return "tie"
    return wins[0] if rtp > ptr else wins[1]


def per_query(df: pd.DataFrame, gold: str = "api_list") -> pd.DataFrame:
    """One row per query: recall and precision of each architecture averaged over runs, and the outcome.

    Queries whose recall is undefined (empty gold set) are left out.
    """
    columns = ["subset", "query_id", "rtp_recall", "ptr_recall", "rtp_precision", "ptr_precision", "recall_diff",
               "outcome", "diverging"]
    if df.empty:
        return pd.DataFrame(columns=columns)
    frame = df.assign(recall=pd.to_numeric(df[metric_column("recall", gold)], errors="coerce").astype(float),
                      precision=pd.to_numeric(df[metric_column("precision", gold)], errors="coerce").astype(float))
    agg = frame.groupby(["subset", "query_id", "arch"])[["recall", "precision"]].mean().unstack("arch")
    if ("recall", "rtp") not in agg.columns or ("recall", "ptr") not in agg.columns:
        return pd.DataFrame(columns=columns)
    out = pd.DataFrame({"rtp_recall": agg[("recall", "rtp")], "ptr_recall": agg[("recall", "ptr")],
                        "rtp_precision": agg[("precision", "rtp")], "ptr_precision": agg[("precision", "ptr")]})
    out = out.dropna(subset=["rtp_recall", "ptr_recall"]).reset_index()
    order = {s: i for i, s in enumerate(subset_order(out["subset"]))}
    out = out.sort_values(["subset", "query_id"], key=lambda c: c.map(order) if c.name == "subset" else c,
                          kind="stable").reset_index(drop=True)
    out["recall_diff"] = out["ptr_recall"] - out["rtp_recall"]
    out["outcome"] = [outcome(r, p) for r, p in zip(out["rtp_recall"], out["ptr_recall"])]
    ptr_rows = df[df["arch"] == "ptr"]
    if "same_as_rtp" in ptr_rows.columns and not ptr_rows.empty:
        same = (ptr_rows.assign(same=ptr_rows["same_as_rtp"].astype(float))
                .groupby(["subset", "query_id"])["same"].mean())
        same_by_query = dict(zip(same.index, same.to_numpy()))
        out["diverging"] = [bool(same_by_query.get((s, q), 1.0) < 1.0) for s, q in zip(out["subset"], out["query_id"])]
    else:
        out["diverging"] = False
    return out[columns]


def win_counts(pq: pd.DataFrame) -> pd.DataFrame:
    """Per subset: counts of each outcome, and mean recall of each side on queries whose top-k sets differ."""
    columns = ["subset", *OUTCOMES, "n_queries", "n_diverging", "rtp_recall_diverging", "ptr_recall_diverging"]
    rows = []
    for subset in subset_order(pq["subset"]) if not pq.empty else []:
        part = pq[pq["subset"] == subset]
        counts = part["outcome"].value_counts()
        div = part[part["diverging"]]
        rows.append({"subset": subset, **{o: int(counts.get(o, 0)) for o in OUTCOMES}, "n_queries": len(part),
                     "n_diverging": len(div),
                     "rtp_recall_diverging": float(div["rtp_recall"].mean()) if len(div) else math.nan,
                     "ptr_recall_diverging": float(div["ptr_recall"].mean()) if len(div) else math.nan})
    return pd.DataFrame(rows, columns=columns)


def divergence(per_run: pd.DataFrame, by: Sequence[str] = ("subset",)) -> pd.DataFrame:
    """Tool-selection divergence: share of queries whose PtR top-k set is not identical to RtP's,
    and share whose sets are disjoint; per run (or seed) means of the per-query divergence (run_means.RUN_MEANS),
    over runs."""
    by = list(by)
    columns = [*by, "not_identical", "not_identical_std", "disjoint", "disjoint_std", "runs"]
    ptr = per_run[(per_run["arch"] == "ptr") & per_run["not_identical"].notna()] if not per_run.empty else per_run
    if ptr.empty:
        return pd.DataFrame(columns=columns)
    out = over_runs(ptr, ["not_identical", "disjoint"], by)
    out = out.rename(columns={"not_identical_mean": "not_identical", "disjoint_mean": "disjoint"})
    return out[columns]


def jaccard(a: frozenset, b: frozenset) -> float:
    """|a ∩ b| / |a ∪ b|; NaN when both are empty (nothing to compare)."""
    union = a | b
    return len(a & b) / len(union) if union else math.nan


# Trajectory table column -> per-run mean column (declared in core.evaluation.run_means).
TRAJECTORY_MEASURES = {"fidelity": "plan_fidelity", "selection_rate": "plan_selection_rate", "steps": "plan_steps",
                       "apis_named": "plan_apis_named", "refusal_rate": "refusal", "parse_error_rate": "parse_error",
                       "complete_miss_rate": "miss", "wrong_tool_rate": "wrong_tool",
                       "refusal_on_miss": "refusal_on_miss"}


def trajectory(per_run: pd.DataFrame, jaccard_by_subset: dict[str, float]) -> pd.DataFrame:
    """Per subset and architecture: planner behaviour, run means of the per-query planner measures
    (run_means.trajectory_means) over runs.

    wrong_tool_rate: among queries whose retrieval recall is 0 (a complete miss), the share where the
    planner still selected something. refusal_on_miss: the share that refused. planner_jaccard (same
    value on both rows, from `planner_jaccard`): mean Jaccard of the two architectures' matched
    selections per query and run, skipping pairs where neither selected anything.
    """
    columns = ["subset", "arch", *TRAJECTORY_MEASURES, "planner_jaccard", "runs"]
    if per_run.empty:
        return pd.DataFrame(columns=columns)
    measures = list(TRAJECTORY_MEASURES.values())
    table = over_runs(per_run, measures, ("subset", "arch"))
    table = table.rename(columns={f"{col}_mean": name for name, col in TRAJECTORY_MEASURES.items()})
    table["planner_jaccard"] = [jaccard_by_subset.get(s, math.nan) for s in table["subset"]]
    return table[columns]


def planner_jaccard(df: pd.DataFrame) -> dict[str, float]:
    """subset -> mean Jaccard of RtP's and PtR's matched selections (plan_matched) per query and run."""
    out: dict[str, float] = {}
    for subset, part in df.groupby("subset") if not df.empty else []:
        sides = {arch: dict(zip(zip(g["query_id"], g["run_index"]), g["plan_matched"]))
                 for arch, g in part.groupby("arch")}
        if "rtp" not in sides or "ptr" not in sides:
            continue
        values = [jaccard(frozenset(map(tuple, sides["rtp"][key] or ())),
                          frozenset(map(tuple, sides["ptr"][key] or ())))
                  for key in sides["rtp"].keys() & sides["ptr"].keys()]
        values = [v for v in values if not math.isnan(v)]
        out[subset] = math.fsum(values) / len(values) if values else math.nan  # exact: any order of the rows
    return out


def stub_cosines(df: pd.DataFrame) -> pd.DataFrame:
    """One row per stub of PtR's run 0: its own top-1 cosine and whether that top-1 API is gold."""
    columns = ["subset", "query_id", "stub", "cosine", "correct", "correct_relevant"]
    ptr = df[(df["arch"] == "ptr") & (df["run_index"] == 0)] if not df.empty else df
    rows = [{"subset": s, "query_id": q, "stub": name, "cosine": cos, "correct": bool(g), "correct_relevant": bool(r)}
            for s, q, names, tops, fb in zip(ptr.get("subset", []), ptr.get("query_id", []), ptr.get("stub_names", []),
                                              ptr.get("stub_top1", []), ptr.get("stub_fallback", []))
            if tops and not fb for name, (cos, g, r) in zip(names, tops)]
    return pd.DataFrame(rows, columns=columns)


def stub_stats(df: pd.DataFrame) -> pd.DataFrame:
    """Per subset, from PtR main rows of every run (then averaged over runs).

    share_with_stubs: queries whose stubs came from the writer (not the raw-query fallback).
    stubs_per_query: over those. unique_name_rate: distinct stub names / stubs, per run.
    top1_match_rate(_relevant): share of stubs whose own top-1 API is gold. cosine_correct /
    cosine_incorrect: mean top-1 cosine of stubs whose top-1 is / is not gold (api_list).
    """
    columns = ["subset", "queries", "share_with_stubs", "stubs_per_query", "unique_name_rate", "top1_match_rate",
               "top1_match_rate_relevant", "cosine_correct", "cosine_incorrect", "runs"]
    ptr = df[(df["arch"] == "ptr") & df["stub_names"].notna()] if not df.empty else df
    rows = []
    for subset, part in ptr.groupby("subset") if not ptr.empty else []:
        per_run = []
        for _, run in part.groupby("run_index"):
            written = run[~run["stub_fallback"].astype(bool)]
            names = [n for ns in written["stub_names"] for n in ns]
            tops = [t for ts in written["stub_top1"] for t in (ts or [])]
            correct = [c for c, g, _ in tops if g]
            wrong = [c for c, g, _ in tops if not g]
            per_run.append({
                "share_with_stubs": len(written) / len(run),
                "stubs_per_query": float(written["n_stubs"].mean()) if len(written) else math.nan,
                "unique_name_rate": len(set(names)) / len(names) if names else math.nan,
                "top1_match_rate": float(np.mean([g for _, g, _ in tops])) if tops else math.nan,
                "top1_match_rate_relevant": float(np.mean([r for _, _, r in tops])) if tops else math.nan,
                # fsum: exact, so the mean does not depend on the order rows were stored in (a bench's threads
                # finish queries in any order, and two stores of the same bench must report the same)
                "cosine_correct": math.fsum(correct) / len(correct) if correct else math.nan,
                "cosine_incorrect": math.fsum(wrong) / len(wrong) if wrong else math.nan})
        frame = pd.DataFrame(per_run)
        rows.append({"subset": subset, "queries": int(part["query_id"].nunique()),
                     **{c: float(frame[c].mean()) for c in frame.columns}, "runs": len(per_run)})
    return pd.DataFrame(rows, columns=columns)


def search_width(df: pd.DataFrame) -> pd.DataFrame:
    """Effective search width per subset and architecture: APIs the method looked at before cutting to k
    (RtP: k; PtR: the union of the per-stub top-k)."""
    columns = ["subset", "arch", "k", "mean", "median", "max"]
    if df.empty:
        return pd.DataFrame(columns=columns)
    frame = df[df["search_width"].notna()].assign(width=lambda d: d["search_width"].astype(float))
    out = frame.groupby(["subset", "arch"]).agg(k=("k", "max"), mean=("width", "mean"), median=("width", "median"),
                                               max=("width", "max")).reset_index()
    return out[columns]


TOKEN_KINDS = ("prompt", "output", "thoughts")


def cost(df: pd.DataFrame) -> pd.DataFrame:
    """Tokens per query (mean over every run's rows) per subset: RtP = planner only; PtR = discovery + planner.

    ptr_overhead = PtR tokens / RtP tokens - 1 (NaN when RtP used no tokens, e.g. the offline backend).
    Planner tokens are means over the planned rows only (plan_refusal set): with a planner sample the other rows
    hold no plan, and counting them as 0 would shrink the planner's cost. n_planned says how many there were.
    """
    columns = ["subset", "n_queries", "n_planned", "rtp_tokens", "ptr_tokens", "ptr_discovery_tokens",
               "ptr_discovery_output_tokens", "ptr_planner_tokens", "ptr_overhead",
               "rtp_prompt_tokens", "rtp_output_tokens", "rtp_thoughts_tokens",
               "ptr_prompt_tokens", "ptr_output_tokens", "ptr_thoughts_tokens"]
    rows = []
    for subset, part in df.groupby("subset") if not df.empty else []:
        rtp, ptr = part[part["arch"] == "rtp"], part[part["arch"] == "ptr"]
        if rtp.empty or ptr.empty:
            continue

        def mean(frame: pd.DataFrame, cols: list[str]) -> float:
            return float(frame[cols].astype(float).sum(axis=1).mean())

        plan_cols = [f"plan_{t}_tokens" for t in TOKEN_KINDS]
        stub_cols = [f"stub_{t}_tokens" for t in TOKEN_KINDS]
        rtp_planned, ptr_planned = (frame[frame["plan_refusal"].notna()] if "plan_refusal" in frame else frame
                                    for frame in (rtp, ptr))
        rtp_total, disc, ptr_plan = mean(rtp_planned, plan_cols), mean(ptr, stub_cols), mean(ptr_planned, plan_cols)
        row = {"subset": subset, "n_queries": int(part["query_id"].nunique()),
               "n_planned": int(ptr_planned["query_id"].nunique()), "rtp_tokens": rtp_total,
               "ptr_tokens": disc + ptr_plan, "ptr_discovery_tokens": disc,
               "ptr_discovery_output_tokens": mean(ptr, ["stub_output_tokens"]), "ptr_planner_tokens": ptr_plan,
               "ptr_overhead": (disc + ptr_plan) / rtp_total - 1 if rtp_total > 0 else math.nan}
        for t in TOKEN_KINDS:
            row[f"rtp_{t}_tokens"] = mean(rtp_planned, [f"plan_{t}_tokens"])
            row[f"ptr_{t}_tokens"] = mean(ptr_planned, [f"plan_{t}_tokens"]) + mean(ptr, [f"stub_{t}_tokens"])
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def routing_savings(cost_table: pd.DataFrame, to_rtp: tuple[str, ...] = ("G1",)) -> dict:
    """What routing subsets whose name starts with to_rtp (G1) to RtP, and the rest to PtR, saves against
    running PtR everywhere: share of all tokens, and share of the discovery tokens. NaN with no tokens."""
    if cost_table.empty:
        return {"total_tokens": math.nan, "discovery_overhead": math.nan, "routed_to_rtp": [], "routed_to_ptr": []}
    n = cost_table["n_queries"].astype(float)
    routed = cost_table["subset"].str.startswith(to_rtp)
    all_ptr = float((cost_table["ptr_tokens"] * n).sum())
    mixed = float((np.where(routed, cost_table["rtp_tokens"], cost_table["ptr_tokens"]) * n).sum())
    discovery = float((cost_table["ptr_discovery_tokens"] * n).sum())
    saved_discovery = float((cost_table["ptr_discovery_tokens"] * n)[routed].sum())
    return {"total_tokens": 1 - mixed / all_ptr if all_ptr > 0 else math.nan,
            "discovery_overhead": saved_discovery / discovery if discovery > 0 else math.nan,
            "routed_to_rtp": cost_table["subset"][routed].tolist(),
            "routed_to_ptr": cost_table["subset"][~routed].tolist()}


def sweep_table(per_run: pd.DataFrame, gold: str, by: Sequence[str]) -> pd.DataFrame:
    """Recall and precision mean±std over runs (k sweep) or seeds (scaling), grouped by `by`."""
    cols = {metric_column(metric, gold): metric for metric in ("recall", "precision")}
    table = over_runs(per_run, list(cols), by)
    table = table.rename(columns={f"{c}_{s}": f"{name}_{s}" for c, name in cols.items() for s in ("mean", "std")})
    return table[[*by, "recall_mean", "recall_std", "precision_mean", "precision_std", "runs", "n_queries"]]


def ksweep_table(per_run: pd.DataFrame, gold: str = "api_list") -> pd.DataFrame:
    """subset, arch, k: recall and precision mean±std over PtR's runs (RtP: its single deterministic run)."""
    return sweep_table(per_run, gold, ("subset", "arch", "k"))


def scaling_table(per_run: pd.DataFrame, gold: str = "api_list") -> pd.DataFrame:
    """subset, size, arch: recall mean±std over seeds, with tool-selection divergence at that size."""
    columns = ["subset", "size", "arch", "recall_mean", "recall_std", "divergence_not_identical",
               "divergence_disjoint", "precision_mean", "precision_std", "runs", "n_queries"]
    if per_run.empty:
        return pd.DataFrame(columns=columns)
    frame = per_run.assign(size=per_run["sub_size"].astype(int), run_index=per_run["sub_seed"].astype(int))
    table = sweep_table(frame, gold, ("subset", "size", "arch"))
    div = divergence(frame, ("subset", "size"))[["subset", "size", "not_identical", "disjoint"]]
    merged = table.merge(div, on=["subset", "size"], how="left")
    merged = merged.rename(columns={"not_identical": "divergence_not_identical", "disjoint": "divergence_disjoint"})
    return merged[columns]


def brand_name_losses(pq_relevant: pd.DataFrame) -> pd.DataFrame:
    """Queries where PtR finds none of the gold and RtP finds all of it (give a frame on `relevant` gold)."""
    return pq_relevant[(pq_relevant["ptr_recall"] < EPS) & (pq_relevant["rtp_recall"] > 1 - EPS)]


def decomposition_wins(pq: pd.DataFrame, n_stubs: pd.Series) -> pd.DataFrame:
    """Queries where PtR's recall beats RtP's and PtR wrote at least two stubs (n_stubs indexed like pq)."""
    return pq[(pq["recall_diff"] > EPS) & (n_stubs >= 2)]


PAIRED_TESTS = ("Wilcoxon signed-rank and paired t over per-query values (RtP vs PtR, each query's mean over runs); "
                "[low, high]: percentile-bootstrap 95% intervals over queries")
PAIRED_COLUMNS = ["subset", "metric", "n", "rtp_mean", "rtp_low", "rtp_high", "ptr_mean", "ptr_low", "ptr_high",
                  "mean_diff", "diff_low", "diff_high", "wilcoxon_p", "paired_t_p", "better"]


def paired_tests(pq: pd.DataFrame) -> pd.DataFrame:
    """Per subset and metric: paired tests of RtP vs PtR over queries.

    The run-level tests above say nothing for a deterministic backend (identical runs); these
    compare the two architectures query by query, which is meaningful for any backend. Queries
    with an undefined value on either side are dropped; identical pairs give p = NaN.
    """
    rows = []
    for subset in subset_order(pq["subset"]) if not pq.empty else []:
        group = pq[pq["subset"] == subset]
        for metric in ("recall", "precision"):
            pairs = group[[f"rtp_{metric}", f"ptr_{metric}"]].astype(float).dropna()
            rtp, ptr = pairs.iloc[:, 0].to_numpy(), pairs.iloc[:, 1].to_numpy()
            diff = ptr - rtp
            t_p = w_p = math.nan
            if len(diff) >= 2 and np.any(np.abs(diff) > EPS):
                t_p = significance.ttest_rel(ptr, rtp).pvalue
                w_p = significance.wilcoxon(ptr, rtp).pvalue
            (rtp_low, rtp_high), (ptr_low, ptr_high), (diff_low, diff_high) = (
                bootstrap_ci(rtp), bootstrap_ci(ptr), bootstrap_ci(diff))
            rows.append({"subset": subset, "metric": metric, "n": len(diff),
                         "rtp_mean": float(rtp.mean()) if len(rtp) else math.nan, "rtp_low": rtp_low,
                         "rtp_high": rtp_high, "ptr_mean": float(ptr.mean()) if len(ptr) else math.nan,
                         "ptr_low": ptr_low, "ptr_high": ptr_high,
                         "mean_diff": float(diff.mean()) if len(diff) else math.nan, "diff_low": diff_low,
                         "diff_high": diff_high,
                         "wilcoxon_p": w_p, "paired_t_p": t_p,
                         "better": better(float(rtp.mean()), float(ptr.mean())) if len(diff) else "tie"})
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS)


HYBRID_COLUMNS = ["subset", "n", "rtp_recall", "ptr_recall", "hybrid_recall", "hybrid_recall_std", "hybrid_precision",
                  "best_single", "vs_best_single", "p_vs_best", "share_at_least_both"]
DISTRACTOR_NOTE = ("distractor scale, SYNTHETIC: sizes above the real registry hold all of its real APIs plus "
                   "synthetic distractor vectors drawn from a local Gaussian mixture of the real embeddings (no "
                   "text is embedded; core.retrieval.synthetic); exact search; mean ± std over distractor draws. "
                   "They extend the scaling curve (stratified real sub-registries up to the real registry) and are "
                   "not measured on real APIs")
HYBRID_NOTE = ("hybrid: PtR's stored stubs plus the raw query as one more search, each API scored by its best "
               "similarity (PtR's own merge rule), top-k; no extra LLM call. Recall is each query's mean over runs; "
               "hybrid_recall_std is over run means; vs_best_single compares with the better fixed architecture "
               "of that subset over the same queries (Wilcoxon p); share_at_least_both: queries where the hybrid "
               "recalls at least as much as RtP and PtR both")


def hybrid_table(pq: pd.DataFrame, hybrid_rows: pd.DataFrame, gold: str = "api_list") -> pd.DataFrame:
    """Per subset and overall: RtP, PtR (per_query's run means) and the hybrid, on the queries all three have."""
    if pq.empty or hybrid_rows.empty:
        return pd.DataFrame(columns=HYBRID_COLUMNS)
    rows = hybrid_rows.assign(
        recall=pd.to_numeric(hybrid_rows[metric_column("recall", gold)], errors="coerce").astype(float),
        precision=pd.to_numeric(hybrid_rows[metric_column("precision", gold)], errors="coerce").astype(float))
    per_query_hybrid = rows.groupby(["subset", "query_id"])[["recall", "precision"]].mean().reset_index()
    merged = pq.merge(per_query_hybrid, on=["subset", "query_id"], how="inner").dropna(subset=["recall"])
    kept = rows.merge(merged[["subset", "query_id"]], on=["subset", "query_id"])  # rows of the compared queries
    out = []
    for subset, group in [*((s, merged[merged["subset"] == s]) for s in subset_order(merged["subset"])),
                          ("all", merged)]:
        if group.empty:
            continue
        rtp, ptr, hyb = (group[c].to_numpy(dtype=float) for c in ("rtp_recall", "ptr_recall", "recall"))
        best_name = "rtp" if rtp.mean() >= ptr.mean() else "ptr"
        best = rtp if best_name == "rtp" else ptr
        diff = hyb - best
        p = significance.wilcoxon(hyb, best).pvalue if np.any(np.abs(diff) > EPS) else math.nan
        run_means = (kept if subset == "all" else kept[kept["subset"] == subset]).groupby("run_index")["recall"].mean()
        out.append({"subset": subset, "n": len(group), "rtp_recall": rtp.mean(), "ptr_recall": ptr.mean(),
                    "hybrid_recall": hyb.mean(), "hybrid_recall_std": float(np.std(run_means.to_numpy(), ddof=1))
                    if len(run_means) > 1 else math.nan, "hybrid_precision": float(group["precision"].mean()),
                    "best_single": best_name, "vs_best_single": diff.mean(), "p_vs_best": p,
                    "share_at_least_both": float(np.mean(hyb >= np.maximum(rtp, ptr) - EPS))})
    return pd.DataFrame(out, columns=HYBRID_COLUMNS)


LEADERBOARD_PROVENANCE = [f for f in PROVENANCE_FIELDS if f != "backend_label"]  # the system column holds it
LEADERBOARD_COLUMNS = ["system", "arch", "subset", "recall", "recall_low", "recall_high", "precision", "precision_low",
                       "precision_high", "n", *LEADERBOARD_PROVENANCE]
LEADERBOARD_NOTE = ("Means over queries (each query's mean over runs) with percentile-bootstrap 95% intervals over "
                    "queries (2,000 resamples, seeded): a deterministic backend has std 0 over runs, so the "
                    "uncertainty that matters is which queries were drawn. The paper's rows are its reported means; "
                    "it gives no per-query values, so no interval.")


def hybrid_per_query(hybrid_rows: pd.DataFrame, gold: str) -> pd.DataFrame:
    """[subset, query_id, hybrid_recall, hybrid_precision]: each query's mean over the hybrid's runs."""
    if hybrid_rows.empty:
        return pd.DataFrame(columns=["subset", "query_id", "hybrid_recall", "hybrid_precision"])
    rows = hybrid_rows.assign(
        hybrid_recall=pd.to_numeric(hybrid_rows[metric_column("recall", gold)], errors="coerce").astype(float),
        hybrid_precision=pd.to_numeric(hybrid_rows[metric_column("precision", gold)], errors="coerce").astype(float))
    return rows.groupby(["subset", "query_id"])[["hybrid_recall", "hybrid_precision"]].mean().reset_index()


def leaderboard_rows(system: str, provenance: dict, pq: pd.DataFrame, hybrid_pq: pd.DataFrame) -> pd.DataFrame:
    """One system's rows of the leaderboard per (arch, subset): mean recall and precision over queries with
    bootstrap 95% intervals, n queries, and the provenance columns. RtP and PtR come from per_query, the
    hybrid from hybrid_per_query (its own queries: those with a defined recall)."""
    sources = [("rtp", pq, "rtp"), ("ptr", pq, "ptr"), ("hybrid", hybrid_pq, "hybrid")]
    rows = []
    for arch, frame, prefix in sources:
        if frame.empty:
            continue
        frame = frame.dropna(subset=[f"{prefix}_recall"])
        for subset in subset_order(frame["subset"]):
            part = frame[frame["subset"] == subset]
            row = {"system": system, "arch": arch, "subset": subset, "n": len(part), **provenance}
            for metric in ("recall", "precision"):
                values = part[f"{prefix}_{metric}"].astype(float).tolist()
                row[metric] = float(np.mean(values))
                row[f"{metric}_low"], row[f"{metric}_high"] = bootstrap_ci(values)
            rows.append(row)
    return pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)


def ptr_gain(board: pd.DataFrame, subset: str) -> pd.DataFrame:
    """Per system: PtR's recall minus RtP's on one subset, the question "is the gain the decomposition
    or the model?" answered per backend (same retrieval, different stub writers)."""
    part = board[board["subset"] == subset].pivot_table(index="system", columns="arch", values="recall",
                                                        aggfunc="first")
    if part.empty or not {"rtp", "ptr"} <= set(part.columns):
        return pd.DataFrame(columns=["system", "rtp", "ptr", "ptr_minus_rtp"])
    return (part.assign(ptr_minus_rtp=part["ptr"] - part["rtp"]).reset_index()
            [["system", "rtp", "ptr", "ptr_minus_rtp"]])
