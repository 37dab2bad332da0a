"""Analyses on small made-up tables, against values computed by hand (and scipy where a CDF is needed)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from core.analysis import tables as A
from tests.helpers import run_means


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def main_rows() -> pd.DataFrame:
    """3 queries x 3 runs. RtP recall [1, .5, 0] every run; PtR's varies. Pass proxy varies on both sides."""
    rtp_recall = [1.0, 0.5, 0.0]
    ptr_recall = [[1.0, 1.0, 0.0], [0.5, 1.0, 0.0], [1.0, 0.5, 0.5]]
    rtp_pass = [[1, 0, 0], [1, 1, 0], [1, 0, 0]]
    ptr_pass = [[1, 1, 0], [1, 1, 1], [1, 1, 0]]
    rows = []
    for r in range(3):
        for q in range(3):
            rows.append({"subset": "G1_instruction", "query_id": q, "arch": "rtp", "run_index": r,
                         "recall_api_list": rtp_recall[q], "precision_api_list": rtp_recall[q] * 0.4,
                         "plan_pass_api_list": bool(rtp_pass[r][q])})
            rows.append({"subset": "G1_instruction", "query_id": q, "arch": "ptr", "run_index": r,
                         "recall_api_list": ptr_recall[r][q], "precision_api_list": [0.2, 0.4, 0.0][q],
                         "plan_pass_api_list": bool(ptr_pass[r][q])})
    return frame(rows)


def test_one_sample_t_matches_the_closed_form_for_two_degrees_of_freedom() -> None:
    # run means 2/3, 1/2, 2/3 against 1/2: mean 11/18, sd 0.0962, t = 2 exactly; df=2: p = 1 - t/sqrt(2+t^2)
    res = A.compare_to_constant([2 / 3, 0.5, 2 / 3], 0.5)
    assert res.statistic == pytest.approx(2.0)
    assert res.p_value == pytest.approx(1 - 2 / math.sqrt(6))
    assert res.test == A.ONE_SAMPLE


def test_two_sample_t_statistic_by_hand_and_p_by_scipy() -> None:
    a, b = [1 / 3, 2 / 3, 1 / 3], [2 / 3, 1.0, 2 / 3]
    res = A.compare_samples(a, b)
    assert res.statistic == pytest.approx(-3 / math.sqrt(2))  # pooled var 1/27, se sqrt(2/81)
    assert res.p_value == pytest.approx(sps.ttest_ind(a, b).pvalue)
    assert res.test == A.TWO_SAMPLE


def test_no_variance_or_one_run_gives_nan_with_the_reason_never_p_zero() -> None:
    same = A.compare_to_constant([0.3, 0.3, 0.3], 0.2)
    assert math.isnan(same.p_value) and same.test == A.NO_VARIANCE
    both = A.compare_samples([0.5, 0.5], [0.7, 0.7])
    assert math.isnan(both.p_value) and both.test == A.NO_VARIANCE
    one = A.compare_to_constant([0.4], 0.2)
    assert math.isnan(one.p_value) and one.test == A.TOO_FEW_RUNS


def test_main_table_by_hand() -> None:
    main = [A.metric_column(metric, "api_list") for metric in A.MAIN_METRICS]
    table = A.main_table(run_means(main_rows(), main), "api_list").set_index("metric")
    recall = table.loc["recall"]
    assert recall["rtp_mean"] == pytest.approx(0.5) and recall["rtp_std"] == 0.0
    assert recall["ptr_mean"] == pytest.approx(11 / 18)
    assert recall["ptr_std"] == pytest.approx(math.sqrt((2 * (1 / 18) ** 2 + (2 / 18) ** 2) / 2))
    assert recall["p_value"] == pytest.approx(1 - 2 / math.sqrt(6)) and recall["test"] == A.ONE_SAMPLE
    assert recall["better"] == "ptr" and recall["n_queries"] == 3 and recall["runs"] == 3
    precision = table.loc["precision"]  # PtR's precision is the same every run: no test is possible
    assert precision["ptr_mean"] == pytest.approx(0.2) and precision["rtp_mean"] == pytest.approx(0.2)
    assert math.isnan(precision["p_value"]) and precision["test"] == A.NO_VARIANCE and precision["better"] == "tie"
    proxy = table.loc["pass_rate_proxy"]
    assert proxy["rtp_mean"] == pytest.approx(4 / 9) and proxy["ptr_mean"] == pytest.approx(7 / 9)
    assert proxy["rtp_std"] == pytest.approx(math.sqrt(1 / 27)) and proxy["test"] == A.TWO_SAMPLE
    assert proxy["p_value"] == pytest.approx(sps.ttest_ind([1 / 3, 2 / 3, 1 / 3], [2 / 3, 1, 2 / 3]).pvalue)


@pytest.mark.parametrize(("rtp", "ptr", "expected"), [
    (0.0, 0.0, "both_miss"), (0.5, 0.5, "tie"), (1.0, 1.0, "tie"), (0.5, 0.25, "rtp_wins"), (0.0, 0.2, "ptr_wins")])
def test_outcome(rtp: float, ptr: float, expected: str) -> None:
    assert A.outcome(rtp, ptr) == expected


def test_per_query_and_win_counts() -> None:
    rows = main_rows()
    rows["same_as_rtp"] = np.where(rows["arch"] == "ptr", rows["query_id"] != 2, None)
    pq = A.per_query(rows, "api_list").set_index("query_id")
    assert pq.loc[0, "ptr_recall"] == pytest.approx(2.5 / 3) and pq.loc[0, "outcome"] == "rtp_wins"
    assert pq.loc[1, "outcome"] == "ptr_wins" and pq.loc[2, "outcome"] == "ptr_wins"
    assert pq.loc[2, "recall_diff"] == pytest.approx(0.5 / 3)
    assert pq["diverging"].tolist() == [False, False, True]
    wins = A.win_counts(pq.reset_index()).iloc[0]
    assert (wins["rtp_wins"], wins["ptr_wins"], wins["tie"], wins["both_miss"]) == (1, 2, 0, 0)
    assert wins["n_diverging"] == 1 and wins["ptr_recall_diverging"] == pytest.approx(0.5 / 3)


def test_per_query_skips_undefined_recall() -> None:
    rows = frame([{"subset": "S", "query_id": 1, "arch": a, "run_index": 0, "recall_api_list": None,
                   "precision_api_list": 0.0} for a in ("rtp", "ptr")])
    assert A.per_query(rows, "api_list").empty


def test_divergence_not_identical_and_disjoint() -> None:
    ptr = [(0, True, 5), (0, False, 2), (0, False, 0), (1, True, 5), (1, True, 5), (1, False, 0)]
    rows = frame([{"subset": "S", "arch": "ptr", "run_index": r, "same_as_rtp": same, "rtp_overlap": ov}
                  for r, same, ov in ptr] + [{"subset": "S", "arch": "rtp", "run_index": 0, "same_as_rtp": None,
                                              "rtp_overlap": None}])
    out = A.divergence(run_means(rows, ["not_identical", "disjoint"])).iloc[0]
    assert out["not_identical"] == pytest.approx(0.5) and out["not_identical_std"] == pytest.approx(math.sqrt(2) / 6)
    assert out["disjoint"] == pytest.approx(1 / 3) and out["disjoint_std"] == 0.0 and out["runs"] == 2


def plan_row(arch: str, q: int, recall: float, named: int, refusal: bool, matched: tuple, fidelity: float) -> dict:
    return {"subset": "S", "query_id": q, "arch": arch, "run_index": 0, "recall_api_list": recall,
            "plan_refusal": refusal, "plan_parse_error": False, "plan_steps": named + 1,
            "plan_apis_named": named, "plan_fidelity": fidelity, "plan_selection_rate": len(matched) / 5,
            "plan_matched": [list(m) for m in matched]}


def test_trajectory_wrong_tool_rate_refusals_and_planner_jaccard() -> None:
    rows = frame([
        plan_row("rtp", 0, 0.0, 2, False, (("t", "a"),), 0.5),
        plan_row("rtp", 1, 0.0, 0, True, (), math.nan),
        plan_row("rtp", 2, 0.5, 1, False, (("t", "c"),), 1.0),
        plan_row("rtp", 3, 1.0, 1, False, (("t", "e"),), 1.0),
        plan_row("ptr", 0, 0.5, 2, False, (("t", "a"), ("t", "b")), 1.0),
        plan_row("ptr", 1, 0.5, 0, True, (), math.nan),
        plan_row("ptr", 2, 0.5, 1, False, (("t", "d"),), 1.0),
        plan_row("ptr", 3, 1.0, 1, False, (("t", "e"),), 1.0),
    ])
    per_run = run_means(rows, list(A.TRAJECTORY_MEASURES.values()), gold="api_list")
    out = A.trajectory(per_run, A.planner_jaccard(rows)).set_index("arch")
    rtp = out.loc["rtp"]
    assert rtp["complete_miss_rate"] == 0.5
    assert rtp["wrong_tool_rate"] == 0.5  # of the two complete misses, one still selected APIs
    assert rtp["refusal_on_miss"] == 0.5 and rtp["refusal_rate"] == 0.25
    assert rtp["fidelity"] == pytest.approx(2.5 / 3) and rtp["steps"] == pytest.approx(2.0)
    assert math.isnan(out.loc["ptr", "wrong_tool_rate"])  # PtR had no complete miss: undefined, not 0
    # Jaccard per query: 1/2, (both empty: skipped), 0, 1 -> 1/2
    assert rtp["planner_jaccard"] == pytest.approx(0.5) and out.loc["ptr", "planner_jaccard"] == pytest.approx(0.5)


def test_stub_stats_and_cosines() -> None:
    rows = frame([
        {"subset": "S", "query_id": 0, "arch": "ptr", "run_index": 0, "stub_fallback": False, "n_stubs": 2,
         "stub_names": ["get_weather", "find_hotel"], "stub_top1": [(0.8, True, True), (0.6, False, False)]},
        {"subset": "S", "query_id": 1, "arch": "ptr", "run_index": 0, "stub_fallback": False, "n_stubs": 1,
         "stub_names": ["get_weather"], "stub_top1": [(0.7, True, False)]},
        {"subset": "S", "query_id": 2, "arch": "ptr", "run_index": 0, "stub_fallback": True, "n_stubs": 1,
         "stub_names": ["the raw query"], "stub_top1": [(0.5, False, False)]},
        {"subset": "S", "query_id": 0, "arch": "rtp", "run_index": 0, "stub_fallback": None, "n_stubs": np.nan,
         "stub_names": None, "stub_top1": None},
    ])
    s = A.stub_stats(rows).iloc[0]
    assert s["queries"] == 3 and s["share_with_stubs"] == pytest.approx(2 / 3)
    assert s["stubs_per_query"] == pytest.approx(1.5) and s["unique_name_rate"] == pytest.approx(2 / 3)
    assert s["top1_match_rate"] == pytest.approx(2 / 3) and s["top1_match_rate_relevant"] == pytest.approx(1 / 3)
    assert s["cosine_correct"] == pytest.approx(0.75) and s["cosine_incorrect"] == pytest.approx(0.6)
    cos = A.stub_cosines(rows)
    assert len(cos) == 3 and cos["correct"].tolist() == [True, False, True]  # the fallback is not a stub


def cost_rows(tokens: dict[str, tuple[int, int]]) -> pd.DataFrame:
    rows = []
    for subset, (plan, stub) in tokens.items():
        for q in range(2):
            base = {"subset": subset, "query_id": q, "run_index": 0, **{f"{p}_{t}_tokens": 0 for p in ("plan", "stub")
                                                                           for t in A.TOKEN_KINDS}}
            rows.append({**base, "arch": "rtp", "plan_prompt_tokens": plan * 4 // 5, "plan_output_tokens": plan // 5})
            rows.append({**base, "arch": "ptr", "plan_prompt_tokens": plan * 4 // 5, "plan_output_tokens": plan // 5,
                         "stub_prompt_tokens": stub // 2, "stub_output_tokens": stub // 2})
    return frame(rows)


def test_cost_overhead_and_routing_savings() -> None:
    table = A.cost(cost_rows({"G1_instruction": (100, 50), "G2_instruction": (200, 100)}))
    g1 = table.set_index("subset").loc["G1_instruction"]
    assert (g1["rtp_tokens"], g1["ptr_tokens"], g1["ptr_discovery_tokens"]) == (100, 150, 50)
    assert g1["ptr_overhead"] == pytest.approx(0.5) and g1["ptr_discovery_output_tokens"] == 25
    saved = A.routing_savings(table)
    # all PtR: 2*150 + 2*300 = 900; routed: 2*100 + 2*300 = 800; discovery 300 of which G1's 100 saved
    assert saved["total_tokens"] == pytest.approx(1 / 9) and saved["discovery_overhead"] == pytest.approx(1 / 3)
    assert saved["routed_to_rtp"] == ["G1_instruction"] and saved["routed_to_ptr"] == ["G2_instruction"]


def test_cost_without_tokens_is_nan_not_zero() -> None:
    table = A.cost(cost_rows({"G1_instruction": (0, 0)}))
    assert math.isnan(table["ptr_overhead"].iloc[0])
    assert math.isnan(A.routing_savings(table)["total_tokens"])


def test_sweep_and_scaling_tables() -> None:
    rows = []
    for seed, recalls in enumerate(([1.0, 0.0], [0.5, 0.5], [1.0, 1.0])):
        for q, rec in enumerate(recalls):
            rows.append({"subset": "S", "arch": "rtp", "k": 5, "run_index": 0, "sub_size": 1000, "sub_seed": seed,
                         "query_id": q, "recall_api_list": rec, "precision_api_list": rec / 5,
                         "same_as_rtp": None, "rtp_overlap": None})
            rows.append({"subset": "S", "arch": "ptr", "k": 5, "run_index": 0, "sub_size": 1000, "sub_seed": seed,
                         "query_id": q, "recall_api_list": rec, "precision_api_list": rec / 5,
                         "same_as_rtp": q == 0, "rtp_overlap": 5 if q == 0 else 0})
    cols = ["recall_api_list", "precision_api_list", "not_identical", "disjoint"]
    per_seed = run_means(frame(rows), cols, ("subset", "arch", "k", "sub_size", "sub_seed"))
    table = A.scaling_table(per_seed, "api_list").set_index("arch")
    assert table.loc["rtp", "recall_mean"] == pytest.approx(2 / 3)  # seed means 1/2, 1/2, 1
    assert table.loc["rtp", "recall_std"] == pytest.approx(math.sqrt(1 / 12))
    assert table.loc["rtp", "runs"] == 3 and table.loc["rtp", "size"] == 1000
    assert table.loc["ptr", "divergence_not_identical"] == pytest.approx(0.5)
    assert table.loc["ptr", "divergence_disjoint"] == pytest.approx(0.5)
    sweep = A.ksweep_table(run_means(frame(rows).assign(run_index=0), cols[:2], ("subset", "arch", "k")), "api_list")
    assert sweep["runs"].tolist() == [1, 1] and sweep["recall_std"].tolist() == [0.0, 0.0]


def test_brand_name_losses_and_decomposition_wins() -> None:
    pq = frame([{"subset": "S", "query_id": i, "rtp_recall": r, "ptr_recall": p, "recall_diff": p - r}
                for i, (r, p) in enumerate([(1.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.2, 0.6)])])
    assert A.brand_name_losses(pq)["query_id"].tolist() == [0]
    assert A.decomposition_wins(pq, pd.Series([1, 1, 1, 2]))["query_id"].tolist() == [3]


def test_paired_tests_match_scipy_and_handle_identical_pairs() -> None:
    from scipy import stats as sps

    from core.analysis.tables import paired_tests

    rtp = [0.5, 0.0, 1.0, 0.2, 0.4, 0.1]
    ptr = [0.7, 0.3, 0.9, 0.6, 0.5, 0.4]
    pq = pd.DataFrame({"subset": ["G2"] * 6 + ["G1"] * 2,
                       "rtp_recall": rtp + [0.5, None], "ptr_recall": ptr + [0.5, 0.2],
                       "rtp_precision": [0.2] * 8, "ptr_precision": [0.2] * 8})
    table = paired_tests(pq).set_index(["subset", "metric"])
    g2 = table.loc[("G2", "recall")]
    assert g2["n"] == 6 and g2["better"] == "ptr"
    assert g2["mean_diff"] == pytest.approx(sum(p - r for p, r in zip(ptr, rtp)) / 6)
    assert g2["paired_t_p"] == pytest.approx(sps.ttest_rel(ptr, rtp).pvalue)
    assert g2["wilcoxon_p"] == pytest.approx(sps.wilcoxon(ptr, rtp).pvalue)
    g1 = table.loc[("G1", "recall")]
    assert g1["n"] == 1 and math.isnan(g1["paired_t_p"])  # the pair with an undefined recall is dropped
    same = table.loc[("G2", "precision")]
    assert math.isnan(same["wilcoxon_p"]) and same["better"] == "tie"  # identical pairs: no test, no winner


def test_hybrid_table_by_hand() -> None:
    pq = pd.DataFrame({"subset": ["G1_instruction"] * 3 + ["G2_instruction"] * 2, "query_id": [1, 2, 3, 4, 5],
                       "rtp_recall": [1.0, 0.5, 0.0, 0.0, 0.2], "ptr_recall": [0.0, 0.5, 1.0, 0.5, 0.4]})
    # two hybrid runs; query 5 has no hybrid row (left out), query 4 varies across runs
    rows = pd.DataFrame({"subset": ["G1_instruction"] * 6 + ["G2_instruction"] * 2, "query_id": [1, 2, 3] * 2 + [4, 4],
                         "run_index": [0, 0, 0, 1, 1, 1, 0, 1],
                         "recall_api_list": [1.0, 0.5, 1.0, 1.0, 0.5, 1.0, 0.5, 1.0],
                         "precision_api_list": [0.2] * 8})
    table = A.hybrid_table(pq, rows).set_index("subset")
    assert list(table.index) == ["G1_instruction", "G2_instruction", "all"]
    g1, g2, everything = table.loc["G1_instruction"], table.loc["G2_instruction"], table.loc["all"]
    assert g1["n"] == 3 and g1["hybrid_recall"] == pytest.approx(2.5 / 3) and g1["hybrid_recall_std"] == 0.0
    assert g1["best_single"] == "rtp" and g1["vs_best_single"] == pytest.approx((0 + 0 + 1) / 3)
    assert g1["share_at_least_both"] == 1.0
    assert g2["n"] == 1 and g2["hybrid_recall"] == 0.75 and g2["best_single"] == "ptr"
    assert g2["hybrid_recall_std"] == pytest.approx(np.std([0.5, 1.0], ddof=1))  # over the two runs' means
    assert everything["hybrid_recall_std"] == pytest.approx(np.std([3.0 / 4, 3.5 / 4], ddof=1))  # query-weighted
    assert everything["n"] == 4 and everything["ptr_recall"] == pytest.approx(2.0 / 4)
    assert everything["p_vs_best"] == pytest.approx(sps.wilcoxon([1, 0.5, 1, 0.75], [0, 0.5, 1, 0.5]).pvalue)
    assert A.hybrid_table(pq, rows.iloc[0:0]).empty
