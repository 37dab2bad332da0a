"""Aggregation over per-query values: means, spreads, significance, win/loss.

Metrics live in metrics.py as per-query values; everything that combines queries or runs is here.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Summary:
    mean: float
    std: float
    n: int

    def to_json(self) -> dict:
        return {"mean": self.mean, "std": self.std, "n": self.n}


def summarise(values: Iterable[float | None]) -> Summary:
    """Mean and sample std (ddof=1) of the defined values; None values (undefined metrics) are skipped."""
    vals = [float(v) for v in values if v is not None]
    n = len(vals)
    if n == 0:
        return Summary(math.nan, math.nan, 0)
    mean = math.fsum(vals) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (n - 1)) if n > 1 else 0.0
    return Summary(mean, std, n)


BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 0


@lru_cache(maxsize=8)
def _resamples(n: int, resamples: int, seed: int) -> np.ndarray:
    """The seeded resample indices for n values: drawing them was most of a leaderboard's cost, and every
    arch and metric of a subset draws the same ones (int32 halves what the cache holds; the values are the same)."""
    indices = np.random.default_rng(seed).integers(0, n, size=(resamples, n)).astype(np.int32)
    indices.setflags(write=False)
    return indices


def bootstrap_ci(values: Iterable[float | None], confidence: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over queries, seeded so a table reads the same every time.

    Why over queries: a deterministic backend repeats identical runs (std 0 over runs), so the spread that
    says how sure a mean is comes from which queries were sampled. None values are skipped; (nan, nan)
    without values.
    """
    vals = np.array([float(v) for v in values if v is not None], dtype=float)
    if vals.size == 0:
        return math.nan, math.nan
    means = vals[_resamples(vals.size, resamples, seed)].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)
