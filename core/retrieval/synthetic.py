"""Synthetic distractor vectors: the registry grown past its 47k real APIs without embedding a single text.

How they are drawn: a local Gaussian mixture fitted on the real vectors. Each real API's neighbourhood (itself
and its NEIGHBOURS - 1 nearest real APIs) is one component, with that neighbourhood's mean and covariance;
a distractor picks a real API uniformly (so topics keep their real shares), draws from its component
(mean + scale * a Gaussian combination of the neighbours' deviations) and is L2-normalised. `scale` is
calibrated on the registry alone: the distractors' median nearest-real-neighbour cosine equals the real
APIs' median leave-one-out nearest-neighbour cosine, so they sit as close to real APIs as real APIs sit to
each other: neither duplicates nor far away. `DistractorModel.check` measures that, and whether real test
queries find them as close as the real non-gold APIs (the evidence data/index_scale.json records).

Deterministic given the seed; registries of one seed are nested (the first m distractors of a larger draw
are the m of a smaller one), so a growing registry keeps the distractors it already had.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import ks_2samp

from core.retrieval.discovery import Hit, Retriever
from core.retrieval.embedding import assert_normalised

METHOD = "local Gaussian mixture of the real vectors (one component per real API: its neighbourhood's mean and " \
         "covariance), scale calibrated on nearest-neighbour cosines, L2-normalised"
NEIGHBOURS = 16  # components of 16 APIs: at 1:1 with real non-gold APIs, distractors take 49% of queries' top-5
BLOCK = 65_536  # distractors per random stream: block b is drawn from default_rng([seed, b])
CALIBRATION = 2048  # distractors drawn to calibrate the scale
SCORE_CHUNK = 2048  # rows scored against the registry at once (2048 x 47k float32 = 385 MB)
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
SYNTHETIC_TOOL = "(synthetic distractor)"


def top_cosines(queries: np.ndarray, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(cosines, rows) of each query's k nearest vectors, best first, exact (numpy, in chunks)."""
    out_s = np.empty((len(queries), k), dtype=np.float32)
    out_r = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), SCORE_CHUNK):
        scores = queries[start:start + SCORE_CHUNK] @ vectors.T
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < scores.shape[1] else np.argsort(-scores, axis=1)
        picked = np.take_along_axis(scores, part, axis=1)
        order = np.lexsort((part, -picked), axis=-1)
        out_s[start:start + len(scores)] = np.take_along_axis(picked, order, axis=1)
        out_r[start:start + len(scores)] = np.take_along_axis(part, order, axis=1)
    return out_s, out_r


def quantiles(values: np.ndarray) -> dict[str, float]:
    return {f"p{round(q * 100):02d}": round(float(np.quantile(values, q)), 4) for q in QUANTILES}


@dataclass(frozen=True, eq=False)
class Distractors:
    """Drawn distractor vectors and, for each, the real registry row whose neighbourhood it came from."""

    vectors: np.ndarray
    parents: np.ndarray


@dataclass(frozen=True, eq=False)
class DistractorModel:
    """The fitted mixture: the real vectors, each one's neighbourhood and the calibrated scale."""

    vectors: np.ndarray  # the real registry's, (n, d), unit norm
    neighbours: np.ndarray  # (n, NEIGHBOURS): each real row's nearest real rows (itself among them)
    real_nn: np.ndarray  # each real row's leave-one-out nearest-neighbour cosine
    scale: float
    fit_seed: int

    @classmethod
    def fit(cls, vectors: np.ndarray, seed: int = 0, neighbours: int = NEIGHBOURS) -> DistractorModel:
        """Neighbourhoods by exact search of the registry against itself, then the scale by bisection."""
        assert_normalised(vectors)
        neighbours = min(neighbours, len(vectors))
        if neighbours < 2:
            raise ValueError("distractors need a registry of at least 2 APIs")
        cosines, rows = top_cosines(vectors, vectors, neighbours)
        own = rows == np.arange(len(vectors))[:, None]
        real_nn = np.where(own[:, 0], cosines[:, 1], cosines[:, 0])  # the nearest other API (a duplicate counts)
        model = cls(vectors, rows, real_nn, 1.0, seed)
        target = float(np.median(real_nn))
        low, high = -2.0, 1.5  # log10 of the scale
        for _ in range(14):  # the scale to 0.06%
            middle = (low + high) / 2
            drawn = model.with_scale(10 ** middle).sample(min(CALIBRATION, 4 * len(vectors)), seed + 1_000_003)
            if np.median(top_cosines(drawn.vectors, vectors, 1)[0][:, 0]) > target:
                low = middle
            else:
                high = middle
        return model.with_scale(10 ** ((low + high) / 2))

    def with_scale(self, scale: float) -> DistractorModel:
        return DistractorModel(self.vectors, self.neighbours, self.real_nn, scale, self.fit_seed)

    def sample(self, n: int, seed: int) -> Distractors:
        """n distractors; the first m of any draw with this seed are the draw of m."""
        out = np.empty((n, self.vectors.shape[1]), dtype=np.float32)
        parents = self._fill(out, seed)
        return Distractors(out, parents)

    def extended(self, total: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, parents): the real vectors followed by total - n distractors, in one matrix (no copy of
        the distractors: 1M x 384 float32 is 1.5 GB); parents holds the distractors' real rows."""
        real = len(self.vectors)
        if total < real:
            raise ValueError(f"a registry with distractors holds at least the {real:,} real APIs, not {total:,}")
        out = np.empty((total, self.vectors.shape[1]), dtype=np.float32)
        out[:real] = self.vectors
        return out, self._fill(out[real:], seed)

    def _fill(self, out: np.ndarray, seed: int) -> np.ndarray:
        n, k = len(out), self.neighbours.shape[1]
        parents = np.empty(n, dtype=np.int64)
        for block, start in enumerate(range(0, n, BLOCK)):
            rng = np.random.default_rng([seed, block])
            size = min(BLOCK, n - start)
            # Whole blocks are always drawn, then cut: a shorter registry is a prefix of a longer one.
            chosen = rng.integers(0, len(self.vectors), BLOCK)[:size]
            weights = rng.standard_normal((BLOCK, k), dtype=np.float32)[:size]
            # mean + scale * sum_j w_j (x_j - mean) / sqrt(k - 1), as one weighted sum of the neighbours
            coef = 1.0 / k + self.scale * (weights - weights.mean(axis=1, keepdims=True)) / np.sqrt(max(k - 1, 1))
            drawn = np.zeros((size, self.vectors.shape[1]), dtype=np.float32)
            members = self.neighbours[chosen]
            for j in range(k):
                drawn += coef[:, j, None] * self.vectors[members[:, j]]
            drawn /= np.linalg.norm(drawn, axis=1, keepdims=True)
            out[start:start + size] = drawn
            parents[start:start + size] = chosen
        return parents

    def provenance(self) -> dict[str, Any]:
        return {"method": METHOD, "neighbours": int(self.neighbours.shape[1]), "scale": round(self.scale, 4),
                "target_nn_cosine": round(float(np.median(self.real_nn)), 4), "fit_seed": self.fit_seed,
                "real_apis": len(self.vectors)}

    def check(self, queries: np.ndarray, gold_rows: Sequence[set[int]], seed: int) -> dict[str, Any]:
        """Evidence that distractors match the real vectors (cosine quantiles, two-sample KS statistics):
        their nearest real API is as close as a real API's nearest other one; and real test queries find
        an equal number of distractors as close as the real APIs that are not their gold (ideal share of
        distractors in a top-5 over both: 0.5)."""
        n = len(self.vectors)
        probe = self.sample(min(4096, n), seed + 7)
        synthetic_nn = top_cosines(probe.vectors, self.vectors, 1)[0][:, 0]
        depth = 5 + max((len(g) for g in gold_rows), default=0)
        real_s, real_r = top_cosines(queries, self.vectors, depth)
        non_gold = np.stack([s[[r not in gold for r in rows]][:5] for s, rows, gold in zip(real_s, real_r, gold_rows)])
        same_size = self.sample(n, seed + 11)
        synth_s = top_cosines(queries, same_size.vectors, 5)[0]
        both = np.concatenate([synth_s, non_gold], axis=1)
        from_synthetic = np.take_along_axis(np.concatenate([np.ones_like(synth_s), np.zeros_like(non_gold)], axis=1),
                                            np.argsort(-both, axis=1, kind="stable")[:, :5], axis=1)
        return {
            "nn_cosine": {"real_leave_one_out": quantiles(self.real_nn), "synthetic_to_real": quantiles(synthetic_nn),
                          "ks": round(float(ks_2samp(self.real_nn, synthetic_nn).statistic), 4),
                          "near_duplicates_real": round(float((self.real_nn >= 0.99).mean()), 4),
                          "near_duplicates_synthetic": round(float((synthetic_nn >= 0.99).mean()), 4),
                          "n_synthetic": len(synthetic_nn)},
            "query_top1": {"real_non_gold": quantiles(non_gold[:, 0]), "synthetic": quantiles(synth_s[:, 0]),
                           "ks": round(float(ks_2samp(non_gold[:, 0], synth_s[:, 0]).statistic), 4)},
            "query_top5": {"real_non_gold": quantiles(non_gold[:, 4]), "synthetic": quantiles(synth_s[:, 4]),
                           "ks": round(float(ks_2samp(non_gold[:, 4], synth_s[:, 4]).statistic), 4)},
            "synthetic_share_of_top5_at_1_to_1": round(float(from_synthetic.mean()), 4),
            "queries": len(queries), "seed": seed,
        }


class DistractorRetriever(Retriever):
    """A retriever over the real registry plus distractor rows (index rows >= len(registry)). A distractor hit
    is named SYNTHETIC_TOOL / "distractor <i>" with its parent's category, so it is never a gold API."""

    def __init__(self, base: Retriever, index: Any, parents: np.ndarray) -> None:
        super().__init__(base.registry, base.encoder, index, index.vectors)
        self.parents = parents

    def merged_hits(self, ranked: Sequence[tuple[int, float, str | None]]) -> tuple[Hit, ...]:
        apis, n = self.registry.apis, len(self.registry)
        hits = []
        for i, (row, score, stub) in enumerate(ranked):
            if row < n:
                api = apis[row]
                hits.append(Hit(api.tool_name, api.api_name, api.category, score, i + 1, stub))
            else:
                parent = apis[int(self.parents[row - n])]
                hits.append(Hit(SYNTHETIC_TOOL, f"distractor {row - n}", parent.category, score, i + 1, stub))
        return tuple(hits)
