"""Bootstrap confidence intervals over queries: against scipy's percentile bootstrap, and their edge cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from core.evaluation.stats import bootstrap_ci


def test_agrees_with_scipys_percentile_bootstrap() -> None:
    """Two independent resamplings of the same data: the bounds agree to within resampling noise."""
    values = np.random.default_rng(3).binomial(1, 0.4, size=200).astype(float) * np.random.default_rng(4).uniform(
        0.2, 1.0, size=200)
    low, high = bootstrap_ci(values, resamples=10_000)
    ref = sps.bootstrap((values,), np.mean, confidence_level=0.95, n_resamples=10_000, method="percentile",
                        rng=np.random.default_rng(5)).confidence_interval
    assert low == pytest.approx(ref.low, abs=0.01)
    assert high == pytest.approx(ref.high, abs=0.01)
    assert low < float(values.mean()) < high


def test_seeded_and_narrower_with_more_queries() -> None:
    rng = np.random.default_rng(7)
    small, large = rng.uniform(size=50), rng.uniform(size=800)
    assert bootstrap_ci(small) == bootstrap_ci(list(small))  # same seed, same interval
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(bootstrap_ci(large)) < width(bootstrap_ci(small)) / 2  # about 1/sqrt(16) as wide


def test_constant_values_and_missing_ones() -> None:
    assert bootstrap_ci([0.5, 0.5, None, 0.5]) == (0.5, 0.5)
    low, high = bootstrap_ci([None])
    assert math.isnan(low) and math.isnan(high)
