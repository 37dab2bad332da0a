"""Two-sided significance tests in numpy and math, so that the dashboard's pages never import scipy.stats.

Importing scipy.stats costs 1-4 s on the first visit of the Results page, and the analyses need only five
tests: the one-sample, paired and Student two-sample t-tests, the Wilcoxon signed-rank test and Spearman's
rho. Each returns what scipy 1.17 returns for the same arguments (tests/test_significance.py compares them):
the same arithmetic for the statistics, the t tail from the regularized incomplete beta function, and the
Wilcoxon test's choice between its exact null distribution and the normal approximation made as
scipy's method="auto" makes it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WILCOXON_EXACT_MAX_N = 50        # scipy: above 50 pairs (zeros included) always the normal approximation
WILCOXON_ENUMERATE_MAX_N = 13    # scipy: with ties or zeros, all 2**n sign flips while 2**n < 9999 resamples
_CF_EPS = 1e-15
_CF_TINY = 1e-300
_CF_MAX_ITERATIONS = 100_000
_STIRLING_MIN = 20.0


@dataclass(frozen=True)
class Significance:
    """A test's statistic and two-sided p-value: the two fields the tables read from scipy's results."""

    statistic: float
    pvalue: float


def ttest_1samp(values: Sequence[float], popmean: float) -> Significance:
    """One-sample t-test of the mean of two or more values against popmean (scipy.stats.ttest_1samp).

    Like scipy's, values without spread give t = ±inf and p = 0 (the callers report n/a before that)."""
    a = np.asarray(values, dtype=float)
    n = a.size
    mean = a.mean()
    var = np.mean((a - mean) ** 2) * (n / (n - 1))  # scipy's order of operations, so t agrees to the last bits
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.divide(mean - popmean, np.sqrt(var / n)))
    return Significance(t, _t_two_sided(t, n - 1))


def ttest_rel(x: Sequence[float], y: Sequence[float]) -> Significance:
    """Paired t-test (scipy.stats.ttest_rel): the one-sample test of the differences x - y against 0, as scipy's."""
    return ttest_1samp(np.asarray(x, dtype=float) - np.asarray(y, dtype=float), 0.0)


def ttest_ind(x: Sequence[float], y: Sequence[float]) -> Significance:
    """Student's two-sample t-test with pooled variance (scipy.stats.ttest_ind, equal_var=True), two or more
    values in each sample."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n1, n2 = a.size, b.size
    v1 = np.mean((a - a.mean()) ** 2) * (n1 / (n1 - 1))
    v2 = np.mean((b - b.mean()) ** 2) * (n2 / (n2 - 1))
    df = n1 + n2 - 2.0
    denom = np.sqrt(((n1 - 1) * v1 + (n2 - 1) * v2) / df * (1.0 / n1 + 1.0 / n2))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.divide(a.mean() - b.mean(), denom))
    return Significance(t, _t_two_sided(t, df))


def wilcoxon(x: Sequence[float], y: Sequence[float]) -> Significance:
    """Wilcoxon signed-rank test of x - y (scipy.stats.wilcoxon with its defaults: zero_method="wilcox",
    no continuity correction, two-sided, method="auto"); the statistic is min(R+, R-).

    Zero differences are dropped from the ranking. scipy's "auto": more than 50 pairs -> normal
    approximation; otherwise no ties and no zeros -> the exact null distribution; otherwise up to 13 pairs
    -> every sign flip (a permutation test that is exact at that size); otherwise the normal approximation,
    with the tie-corrected variance.
    """
    d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    n = d.size
    if n == 0 or np.isnan(d).any():  # scipy: NaN propagates
        return Significance(math.nan, math.nan)
    nonzero = d[d != 0]
    ranks, tie_counts = _average_ranks(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    r_minus = float(ranks[nonzero < 0].sum())
    statistic = min(r_plus, r_minus)
    has_ties = bool(np.any(tie_counts > 1))
    has_zeros = nonzero.size < n
    if n <= WILCOXON_EXACT_MAX_N and (not (has_ties or has_zeros) or n <= WILCOXON_ENUMERATE_MAX_N):
        return Significance(statistic, _signed_rank_enumerated_p(ranks, r_plus))
    count = float(nonzero.size)
    mean = count * (count + 1.0) * 0.25
    se = math.sqrt((count * (count + 1.0) * (2.0 * count + 1.0) - float(np.sum(tie_counts ** 3 - tie_counts)) / 2)
                   / 24)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = float(np.divide(r_plus - mean, se))
    return Significance(statistic, math.erfc(abs(z) / math.sqrt(2.0)))


def spearmanr(x: Sequence[float], y: Sequence[float]) -> Significance:
    """Spearman's rho over average ranks and its t-based p-value (scipy.stats.spearmanr); NaN, as scipy's, for
    fewer than two pairs, a constant input or a NaN."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size <= 1 or np.all(a == a[0]) or np.all(b == b[0]) or np.isnan(a).any() or np.isnan(b).any():
        return Significance(math.nan, math.nan)
    rs = float(np.corrcoef(_average_ranks(a)[0], _average_ranks(b)[0])[1, 0])
    dof = a.size - 2
    with np.errstate(divide="ignore"):
        t = rs * math.sqrt(max(float(np.divide(dof, (rs + 1.0) * (1.0 - rs))), 0.0))
    return Significance(rs, _t_two_sided(t, dof))


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..n with ties sharing their average rank (scipy.stats.rankdata's "average"), and the size of
    each group of equal values (the Wilcoxon variance's tie correction)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(starts, values.size))
    ranks = np.empty(values.size, dtype=float)
    ranks[order] = np.repeat(starts + 1 + (counts - 1) / 2, counts)
    return ranks, counts.astype(float)


def _signed_rank_enumerated_p(ranks: np.ndarray, r_plus: float) -> float:
    """Two-sided p of R+ over all 2**n equally likely signs of the ranks: scipy's exact distribution without
    ties, and its (then exhaustive) permutation test with ties. Ranks are multiples of 1/2, so the counts run
    over doubled ranks in integers; zeros would only double every count, so leaving them out changes nothing."""
    doubled = np.rint(ranks * 2).astype(np.int64)
    counts = np.zeros(int(doubled.sum()) + 1, dtype=np.int64)
    counts[0] = 1
    for r in doubled:  # each rank counted into R+ or not: at most 50 ranks, at most 2**50 ways (fits int64)
        counts[r:] = counts[r:] + counts[:counts.size - r]
    observed = int(round(r_plus * 2))
    total = 2 ** doubled.size
    at_most, at_least = int(counts[:observed + 1].sum()), int(counts[observed:].sum())
    return min(1.0, 2 * min(at_most / total, at_least / total))


def _t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom: I_x(df/2, 1/2) with x = df / (df + t^2)."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0
    t2 = t * t
    return _betainc(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2))


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """Regularized incomplete beta I_x(a, b), with y = 1 - x passed in to keep its precision: the continued
    fraction of whichever of I_x(a, b) and 1 - I_y(b, a) converges fast."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_x = math.log1p(-y) if y < 0.5 else math.log(x)  # near 1, log(x) of a rounded x loses digits a * log(x) keeps
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    log_front = a * log_x + b * log_y - _log_beta(a, b)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, y) / b


def _log_beta(a: float, b: float) -> float:
    """log B(a, b). With one argument large (many degrees of freedom), lgamma(a + b) - lgamma(a) would
    subtract two large numbers and lose about 1e-10 at a million; Stirling's series of the difference does not."""
    small, big = min(a, b), max(a, b)
    if big < _STIRLING_MIN:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    # lgamma(big + small) - lgamma(big)
    log_gamma_ratio = ((big - 0.5) * math.log1p(small / big) + small * math.log(big + small) - small
                       + _stirling_correction(big + small) - _stirling_correction(big))
    return math.lgamma(small) - log_gamma_ratio


def _stirling_correction(z: float) -> float:
    """lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2): its asymptotic series, below 1e-15 for z >= 20."""
    w = 1.0 / (z * z)
    return (1.0 / 12 - w * (1.0 / 360 - w * (1.0 / 1260 - w * (1.0 / 1680 - w / 1188)))) / z


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The incomplete beta's continued fraction by the modified Lentz method (Numerical Recipes' betacf)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _CF_TINY else _CF_TINY)
    h = d
    for m in range(1, _CF_MAX_ITERATIONS + 1):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
                          -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _CF_TINY else _CF_TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _CF_TINY else _CF_TINY
            delta = d * c
            h *= delta
        if abs(delta - 1.0) < _CF_EPS:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})")
