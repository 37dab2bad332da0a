"""core.evaluation.significance against scipy.stats: the same statistics and two-sided p-values to 1e-9, on
random and hand-made inputs that reach every branch (scipy's exact, permutation and normal Wilcoxon), and the
pages' analyses running without importing scipy.stats."""
from __future__ import annotations

import itertools
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import special
from scipy import stats as sps

from core.evaluation import significance as sig
from core.settings import PROJECT_ROOT

TOL = 1e-9
RECALLS = np.array([0.0, 0.5, 1.0, 1 / 3, 2 / 3])  # what per-query recall takes with 1-3 gold APIs


def agree(mine: float, reference: float) -> bool:
    """Equal to within TOL, or both NaN, or the same infinity."""
    if math.isnan(reference) or math.isnan(mine):
        return math.isnan(reference) and math.isnan(mine)
    if math.isinf(reference) or math.isinf(mine):
        return mine == reference
    return abs(mine - reference) <= TOL


def check_wilcoxon(x: np.ndarray, y: np.ndarray) -> None:
    ref, mine = sps.wilcoxon(x, y), sig.wilcoxon(x, y)
    assert agree(mine.pvalue, float(ref.pvalue)), (x - y, mine, ref)
    assert agree(mine.statistic, float(ref.statistic)), (x - y, mine, ref)


def check_t(mine: sig.Significance, ref: object) -> None:
    assert agree(mine.pvalue, float(ref.pvalue)), (mine, ref)
    assert agree(mine.statistic, float(ref.statistic)), (mine, ref)


def check_spearman(x: np.ndarray, y: np.ndarray) -> None:
    ref, mine = sps.spearmanr(x, y), sig.spearmanr(x, y)
    assert agree(mine.statistic, float(ref.statistic)), (x, y, mine, ref)
    assert agree(mine.pvalue, float(ref.pvalue)), (x, y, mine, ref)


def recall_pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-query recalls of two architectures: many equal pairs (zeros) and many tied differences."""
    return rng.choice(RECALLS, n), rng.choice(RECALLS, n)


# --------------------------------------------------------------------------------------------- Wilcoxon

@pytest.mark.slow
def test_wilcoxon_exact_distribution_for_1_to_50_pairs_without_ties_or_zeros() -> None:
    rng = np.random.default_rng(0)
    for n in range(1, 51):
        for _ in range(6):
            x, y = rng.normal(size=n), rng.normal(size=n)
            check_wilcoxon(x, y)
        check_wilcoxon(np.arange(1.0, n + 1), np.zeros(n))   # every difference positive: the smallest p
        check_wilcoxon(np.zeros(n), np.arange(1.0, n + 1))   # every difference negative
        shift = rng.normal(0.8, 1.0, size=n)
        check_wilcoxon(shift, np.zeros(n))                   # mostly one direction


def test_wilcoxon_normal_approximation_above_50_pairs() -> None:
    rng = np.random.default_rng(1)
    for n in (51, 52, 60, 100, 250, 1000):
        x = rng.normal(size=n)
        check_wilcoxon(x, rng.normal(size=n))
        check_wilcoxon(x + 0.2, x - rng.uniform(0, 0.5, size=n))
        check_wilcoxon(*recall_pairs(rng, n))                # ties and zeros: tie-corrected variance
    for seed in range(20):
        r = np.random.default_rng(100 + seed)
        n = int(r.integers(51, 400))
        rtp, ptr = recall_pairs(r, n)
        check_wilcoxon(ptr, rtp)
        check_wilcoxon(np.clip(ptr + r.choice([0.0, 0.0, 0.5], n), 0, 1), rtp)  # PtR better on some queries


def test_wilcoxon_with_ties_or_zeros_above_13_pairs_uses_the_normal_approximation() -> None:
    rng = np.random.default_rng(2)
    for n in (14, 15, 20, 33, 50):
        for _ in range(5):
            check_wilcoxon(*recall_pairs(rng, n))
        d = rng.normal(size=n)
        d[0] = 0.0                                           # one zero, no ties
        check_wilcoxon(d, np.zeros(n))
        d = rng.integers(-3, 4, size=n).astype(float)        # integer differences: heavy ties, some zeros
        check_wilcoxon(d, np.zeros(n))


@pytest.mark.slow
def test_wilcoxon_with_ties_or_zeros_up_to_13_pairs_enumerates_every_sign() -> None:
    """scipy runs a permutation test here (exhaustive: 2**n <= 8192 < 9999 resamples); it costs seconds at
    n = 12-13 (one case each in the tests below), so more cases below that, plus a brute-force check of every
    n without scipy."""
    rng = np.random.default_rng(3)
    for n in range(2, 10):
        for _ in range(4):
            x, y = recall_pairs(rng, n)
            if np.any(x != y):
                check_wilcoxon(x, y)
    for n in (10, 11):
        x, y = recall_pairs(rng, n)
        x[0], y[0] = 1.0, 0.0                                # at least one difference
        check_wilcoxon(x, y)
    check_wilcoxon(np.array([1.0, 2, 3, 0, 0]), np.zeros(5))  # zeros without ties
    check_wilcoxon(np.array([1.0, -1, 1, 1, -2, 2]), np.zeros(6))  # ties without zeros
    check_wilcoxon(np.array([0.5, 0.5, 0.5, 0.5]), np.zeros(4))  # every difference tied
    check_wilcoxon(np.array([0.0, 0, 0, 0.25]), np.zeros(4))  # one difference among zeros
    for n in range(1, 14):
        for _ in range(10):
            d = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0, 1 / 3], n)
            assert sig.wilcoxon(d, np.zeros(n)).pvalue == pytest.approx(brute_force_p(d), abs=1e-15)


def brute_force_p(d: np.ndarray) -> float:
    """scipy's exhaustive permutation test written out: R+ of every sign flip of d."""
    nonzero = d[d != 0]
    ranks = sps.rankdata(np.abs(nonzero))
    observed = ranks[nonzero > 0].sum()
    null = [sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product((0, 1), repeat=nonzero.size)]
    less, greater = np.mean(np.array(null) <= observed), np.mean(np.array(null) >= observed)
    return min(1.0, 2 * min(less, greater))


@pytest.mark.slow
def test_wilcoxon_choice_at_the_boundaries() -> None:
    """The exact test up to 50 tie-free pairs and the normal one at 51; enumeration up to 13 pairs with a
    tie and the normal one at 14: the p-values differ across each boundary, and agree with scipy on both sides."""
    exact = sig.wilcoxon(np.arange(1.0, 51), np.zeros(50)).pvalue
    assert exact == 2.0 / 2 ** 50                            # the exact distribution's far tail
    check_wilcoxon(np.arange(1.0, 51), np.zeros(50))
    check_wilcoxon(np.arange(1.0, 52), np.zeros(51))
    ties = np.array([1.0, 1.0, -2, 3, 4, 5, -6, 7, 8, 9, 10, 11, 12])
    check_wilcoxon(ties, np.zeros(13))
    check_wilcoxon(np.append(ties, 13.0), np.zeros(14))


def test_wilcoxon_degenerate_inputs() -> None:
    check_wilcoxon(np.array([0.3]), np.array([0.1]))        # one pair: p = 1
    check_wilcoxon(np.array([0.1, 0.9]), np.array([0.0, 1.0]))
    assert math.isnan(sig.wilcoxon(np.zeros(0), np.zeros(0)).pvalue)
    assert math.isnan(sig.wilcoxon([math.nan, 1.0], [0.0, 0.0]).pvalue)


def test_wilcoxon_ties_are_exact_float_equality_as_in_scipy() -> None:
    """2/3 - 1/3 and 1/3 - 0 differ in the last bit: not tied, in scipy and here."""
    x = np.array([2 / 3, 1 / 3, 1.0, 0.5, 0.0, 2 / 3] * 3)
    y = np.array([1 / 3, 0.0, 2 / 3, 1 / 6, 1 / 3, 0.0] * 3)
    check_wilcoxon(x, y)
    check_wilcoxon(x[:12], y[:12])


# --------------------------------------------------------------------------------------------- t-tests

@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")  # scipy's, on equal differences
def test_t_tests_agree_with_scipy() -> None:
    rng = np.random.default_rng(4)
    for n in (2, 3, 4, 5, 8, 13, 30, 100, 1000, 5000):
        for _ in range(5):
            x, y = rng.normal(0.4, 0.2, size=n), rng.normal(0.5, 0.3, size=n)
            check_t(sig.ttest_1samp(x, 0.45), sps.ttest_1samp(x, 0.45))
            check_t(sig.ttest_rel(x, y), sps.ttest_rel(x, y))
            m = int(rng.integers(2, n + 2))
            y2 = rng.normal(0.5, 0.3, size=m)
            check_t(sig.ttest_ind(x, y2), sps.ttest_ind(x, y2))
            rtp, ptr = recall_pairs(rng, n)
            if np.any(ptr != rtp):
                check_t(sig.ttest_rel(ptr, rtp), sps.ttest_rel(ptr, rtp))
    runs = np.array([0.61, 0.63, 0.60])                      # run means against a deterministic RtP
    for constant in (0.2, 0.6, 0.613, 0.62, 0.9):
        check_t(sig.ttest_1samp(runs, constant), sps.ttest_1samp(runs, constant))
    check_t(sig.ttest_ind(runs, [0.5, 0.5]), sps.ttest_ind(runs, [0.5, 0.5]))  # one sample without spread
    check_t(sig.ttest_ind([0.1, 0.2], [0.15, 0.25, 0.35]), sps.ttest_ind([0.1, 0.2], [0.15, 0.25, 0.35]))


@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")
def test_t_tests_without_spread_give_scipys_infinity() -> None:
    """Every paired difference 0.5: scipy says t = inf, p = 0 (tables.paired_tests passes such pairs)."""
    x, y = np.array([1.0, 0.5, 1.0]), np.array([0.5, 0.0, 0.5])
    check_t(sig.ttest_rel(x, y), sps.ttest_rel(x, y))
    check_t(sig.ttest_rel(y, x), sps.ttest_rel(y, x))
    check_t(sig.ttest_1samp([0.5, 0.5], 0.5), sps.ttest_1samp([0.5, 0.5], 0.5))  # 0 / 0: NaN


def test_t_tail_over_degrees_of_freedom() -> None:
    for df in (2, 3, 4, 5, 7, 10, 29, 30, 99, 500, 1000, 4999, 10**5, 10**6, 2.5):
        for t in [0.0, 1e-12, 1e-6, *np.geomspace(1e-3, 1e3, 60), 1e8, math.inf]:
            assert agree(sig._t_two_sided(t, df), float(2 * special.stdtr(df, -t))), (df, t)
            assert sig._t_two_sided(-t, df) == sig._t_two_sided(t, df)


def test_t_tail_with_one_degree_of_freedom_is_the_cauchy_tail() -> None:
    """df = 1 (two run means): p = 1 - 2 atan|t| / pi. scipy's stdtr agrees except for |t| near 1e-8, where
    its own value is off by up to 3e-9 (p within 1e-8 of 1); ours follows the closed form there."""
    for t in [1e-10, 1e-8, 3e-8, 1e-6, *np.geomspace(1e-3, 1e6, 60)]:
        cauchy = 1 - 2 * math.atan(t) / math.pi if t < 1 else 2 * math.atan(1 / t) / math.pi
        assert sig._t_two_sided(t, 1) == pytest.approx(cauchy, rel=1e-13, abs=1e-15), t
        if t >= 1e-6:
            assert agree(sig._t_two_sided(t, 1), float(2 * special.stdtr(1, -t))), t


# --------------------------------------------------------------------------------------------- Spearman

def test_spearman_agrees_with_scipy() -> None:
    rng = np.random.default_rng(5)
    for n in (3, 4, 5, 10, 40, 200, 2000):
        for _ in range(5):
            top1 = rng.uniform(0.3, 0.9, size=n)
            rtp, ptr = recall_pairs(rng, n)
            if len(set(ptr - rtp)) > 1:
                check_spearman(top1, ptr - rtp)              # ties in one variable (top1_signal's data)
                check_spearman(np.round(top1, 1), ptr - rtp)  # ties in both
            x = rng.normal(size=n)
            check_spearman(x, x + rng.normal(scale=0.5, size=n))
    check_spearman(np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 2.0, 3.0, 5.0]))  # rho = 1: p = 0
    check_spearman(np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 0.5, 0.0, -1.0]))  # rho = -1
    check_spearman(np.array([0.1, 0.2, 0.3]), np.array([0.0, 1.0, 0.0]))           # rho = 0
    check_spearman(np.array([0.5, 0.6, 0.7]), np.array([0.5, -0.5, 0.5]))


def test_spearman_degenerate_inputs_are_nan_as_in_scipy() -> None:
    with pytest.warns(sps.ConstantInputWarning):
        check_spearman(np.array([0.5, 0.5, 0.5]), np.array([0.0, 1.0, 0.5]))
    check_spearman(np.array([0.5]), np.array([1.0]))
    check_spearman(np.array([0.5, math.nan, 0.2]), np.array([1.0, 0.0, 0.5]))


# --------------------------------------------------------------------------------------------- the pages

PAGE_ANALYSES = textwrap.dedent("""
    import sys
    import numpy as np
    import pandas as pd
    from core.analysis import router, tables

    rng = np.random.default_rng(0)
    recalls = [0.0, 0.5, 1.0, 1 / 3, 2 / 3]
    n = 80
    pq = pd.DataFrame({"subset": ["G1_instruction"] * 10 + ["G2_instruction"] * (n - 10), "query_id": range(n),
                       "rtp_recall": rng.choice(recalls, n), "ptr_recall": rng.choice(recalls, n),
                       "rtp_precision": rng.uniform(size=n), "ptr_precision": rng.uniform(size=n),
                       "rtp_top1": rng.uniform(0.3, 0.9, n)})
    assert tables.paired_tests(pq)["wilcoxon_p"].notna().all()
    cv = router.cross_validate(pq)
    assert router.router_table(cv)["p_vs_best"].notna().any()
    assert not np.isnan(router.top1_signal(pq)["p"])
    assert not np.isnan(tables.compare_to_constant([0.61, 0.63, 0.60], 0.5).p_value)
    assert not np.isnan(tables.compare_samples([0.61, 0.63, 0.60], [0.5, 0.52]).p_value)
    loaded = sorted(m for m in sys.modules if m.startswith("scipy"))
    assert "scipy.stats" not in sys.modules, loaded
""")


@pytest.mark.subprocess
def test_the_pages_analyses_do_not_import_scipy_stats() -> None:
    """In a fresh interpreter: this process imported scipy.stats above, which would hide an import."""
    done = subprocess.run([sys.executable, "-c", PAGE_ANALYSES], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
