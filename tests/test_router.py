"""The adaptive router: threshold fitting, out-of-fold routing and its summary, on hand-made per-query tables."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.analysis import router


def frame(top1: list[float], rtp: list[float], ptr: list[float], subset: str = "G1_instruction") -> pd.DataFrame:
    return pd.DataFrame({"subset": subset, "query_id": range(len(top1)), "rtp_top1": top1,
                         "rtp_recall": rtp, "ptr_recall": ptr})


def test_the_fitted_threshold_separates_where_each_side_wins() -> None:
    # High cosine: RtP found everything; low cosine: only PtR did.
    fit = router.fit_threshold(frame([0.9, 0.8, 0.7, 0.4, 0.3, 0.2], [1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]))
    assert 0.4 < fit.threshold <= 0.7 and fit.recall == 1.0 and fit.share_to_ptr == 0.5
    assert fit.threshold == 0.7  # ties go to the lowest threshold that reaches the best recall


def test_pure_policies_are_candidates() -> None:
    everything_to_rtp = router.fit_threshold(frame([0.9, 0.1], [1, 1], [0, 0]))
    assert everything_to_rtp.threshold == -math.inf and everything_to_rtp.share_to_ptr == 0.0
    everything_to_ptr = router.fit_threshold(frame([0.9, 0.1], [0, 0], [1, 1]))
    assert everything_to_ptr.threshold == math.inf and everything_to_ptr.share_to_ptr == 1.0


def test_routed_recall_picks_per_query() -> None:
    got = router.routed_recall(np.array([0.2, 0.8]), np.array([0.1, 0.9]), np.array([0.5, 0.3]), 0.5)
    np.testing.assert_allclose(got, [0.5, 0.9])


def separable(n: int, subset: str, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    top1 = rng.uniform(0.3, 0.9, n)
    return frame(list(top1), list((top1 >= 0.6).astype(float)), list((top1 < 0.6).astype(float)), subset)


def test_cross_validation_fits_on_other_folds_and_is_stratified() -> None:
    data = pd.concat([separable(50, "G1_instruction", 1), separable(30, "G2_instruction", 2)], ignore_index=True)
    cv = router.cross_validate(data, folds=5, seed=0)
    assert list(cv.columns) == router.CV_COLUMNS and len(cv) == 80
    per_fold = cv.groupby(["fold", "subset"]).size().unstack()
    assert (per_fold["G1_instruction"] == 10).all() and (per_fold["G2_instruction"] == 6).all()
    # Each fold's threshold comes from the other folds: it still lands between the classes here.
    assert cv["threshold"].between(0.5, 0.7).all()
    assert cv.groupby("fold")["threshold"].nunique().eq(1).all()
    table = router.router_table(cv).set_index("subset")
    # the seeded data: 42 of 80 queries are RtP wins, 38 PtR wins; the fitted thresholds route all but one right
    assert table.loc["all", ["rtp_recall", "ptr_recall"]].tolist() == [42 / 80, 38 / 80]
    assert table.loc["all", "router_recall"] == pytest.approx(79 / 80) and table.loc["all", "oracle_recall"] == 1.0
    assert table.loc["all", "router_recall"] > max(table.loc["all", "rtp_recall"], table.loc["all", "ptr_recall"])


def test_router_table_lists_subsets_in_the_study_order() -> None:
    data = pd.concat([separable(20, "G1_category", 1), separable(20, "G1_instruction", 2)], ignore_index=True)
    assert router.router_table(router.cross_validate(data))["subset"].tolist() == ["G1_instruction", "G1_category",
                                                                                      "all"]


def test_out_of_sample_recall_is_not_the_in_sample_one() -> None:
    # Pure noise: the in-sample fit always finds a lucky threshold; held-out folds give it back.
    rng = np.random.default_rng(7)
    n = 300
    noise = frame(list(rng.uniform(0.3, 0.9, n)), list(rng.integers(0, 2, n).astype(float)),
                  list(rng.integers(0, 2, n).astype(float)))
    in_sample = router.fit_threshold(noise).recall
    out = router.router_table(router.cross_validate(noise)).set_index("subset").loc["all", "router_recall"]
    assert out < in_sample


def test_router_table_statistics() -> None:
    cv = pd.DataFrame({"subset": ["a"] * 4 + ["b"] * 4, "query_id": range(8), "fold": 0, "threshold": 0.5,
                       "to_ptr": [True, False] * 4, "rtp_recall": [0, 1, 0, 1, 1, 1, 1, 1.0],
                       "ptr_recall": [1, 0, 1, 0, 0, 0, 0, 0.0], "router_recall": [1, 1, 1, 1, 0, 1, 0, 1.0]})
    table = router.router_table(cv).set_index("subset")
    assert table.loc["a", "router_recall"] == 1.0 and table.loc["a", "oracle_recall"] == 1.0
    assert table.loc["b", "best_single"] == "rtp" and table.loc["b", "vs_best_single"] == -0.5
    assert table.loc["all", "n"] == 8 and table.loc["all", "share_to_ptr"] == 0.5
    same = cv.assign(router_recall=cv["rtp_recall"])
    assert math.isnan(router.router_table(same).set_index("subset").loc["b", "p_vs_best"])  # no differing pair


def test_too_few_queries_and_missing_cosines() -> None:
    one_each = pd.concat([frame([0.5], [1], [0], "G1_instruction"), frame([0.6], [0], [1], "G2_instruction")])
    assert router.cross_validate(one_each, seed=0).empty  # both land in fold 0: nothing to fit on
    tiny = frame([0.5, 0.6], [1, 0], [0, 1])
    assert router.cross_validate(tiny).empty == (len(set(router.fold_ids(tiny, 5, 0))) < 2)
    assert math.isnan(router.top1_signal(frame([0.5, 0.6, 0.7], [1, 1, 1], [0, 0, 0]))["spearman_rho"])
    assert router.router_table(router.cross_validate(one_each)).empty
    with_gaps = pd.concat([separable(40, "G1_instruction", 3), frame([math.nan], [1.0], [0.0])], ignore_index=True)
    assert len(router.cross_validate(with_gaps)) == 40  # a query without RtP hits cannot be routed
    signal = router.top1_signal(separable(40, "G1_instruction", 4))
    assert signal["spearman_rho"] < -0.8 and signal["n"] == 40


def test_threshold_curve_spans_both_pure_policies() -> None:
    data = separable(40, "G1_instruction", 5)
    curve = router.threshold_curve(data, points=11)
    assert len(curve) == 11 and curve["share_to_ptr"].iloc[0] == 0.0 and curve["share_to_ptr"].iloc[-1] == 1.0
    assert curve["recall"].iloc[0] == pytest.approx(data["rtp_recall"].mean())
    assert curve["recall"].iloc[-1] == pytest.approx(data["ptr_recall"].mean())
