"""Intent-Registry Coupling, measured per query before any LLM call: how close a user's words are to the documents
of the APIs that answer them (the paper's explanation of the crossover, which it never measures).

The measure: the best cosine between the query's embedding and its gold APIs' documents, with the retriever's own
encoder (MiniLM), strict gold (api_list). Why this one: it is what RtP's single search can reach at best, so a low
value says the raw query points away from every gold document, which is where PtR's rewriting into stubs should
help; it needs no LLM and no lexical tokeniser, and it is comparable across registries of any language mix.
Binning and intervals are pure functions over per-query (coupling, PtR - RtP) pairs.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.evaluation.stats import bootstrap_ci

COUPLING_BINS = 5  # quantile bins of the pooled couplings


def coupling(query_vector: np.ndarray, gold_vectors: np.ndarray) -> float | None:
    """The best cosine between one query and its gold documents (L2-normalised vectors); None without gold."""
    if len(gold_vectors) == 0:
        return None
    return float(np.max(gold_vectors.astype(np.float32) @ query_vector.astype(np.float32)))


@dataclass(frozen=True)
class CouplingBin:
    """Queries whose coupling lies in [low, high]: their mean PtR - RtP recall with a bootstrap 95% interval."""

    low: float
    high: float
    n: int
    mean_diff: float
    diff_low: float
    diff_high: float
    ptr_wins: int
    rtp_wins: int


def coupling_bins(couplings: Sequence[float], diffs: Sequence[float], bins: int = COUPLING_BINS) -> list[CouplingBin]:
    """Quantile bins of `couplings` (equal counts, ties kept together), each with the mean of its `diffs`."""
    values, deltas = np.asarray(couplings, dtype=float), np.asarray(diffs, dtype=float)
    if len(values) == 0:
        return []
    edges = np.unique(np.quantile(values, np.linspace(0, 1, bins + 1)))
    which = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2) if len(edges) > 1 else \
        np.zeros(len(values), dtype=int)
    out = []
    for b in range(max(len(edges) - 1, 1)):
        part = deltas[which == b]
        if len(part) == 0:
            continue
        low, high = bootstrap_ci(part.tolist())
        out.append(CouplingBin(float(values[which == b].min()), float(values[which == b].max()), len(part),
                               float(part.mean()), low, high, int((part > 0).sum()), int((part < 0).sum())))
    return out
