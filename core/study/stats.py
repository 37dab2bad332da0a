"""Aggregation over per-query values: means, spreads, significance, win/loss.

Metrics live in metrics.py as per-query values; everything that combines queries or runs is here.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


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
