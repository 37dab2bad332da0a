"""The adaptive router's fitted threshold as a type that needs neither numpy nor pandas.

The Inspector applies a kept fit (core.analysis.store_summary) to a shared ?q= link's first answer: unpickling it
must not import pandas, so the type lives here rather than in core.analysis.router.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RouterFit:
    """A threshold and what it scored on the queries it was fitted on."""

    threshold: float  # route to PtR when rtp_top1 < threshold; -inf: all RtP, +inf: all PtR
    recall: float  # mean routed recall on those queries (in sample)
    share_to_ptr: float
    n: int  # the queries it was fitted on
    folds: int = 0  # the cross-validation behind the reported figures (0: none ran)
    fold_thresholds: tuple[float, ...] = ()  # each fold's threshold, distinct, rounded to 6 places
