"""Per-query retrieval metrics: pure functions of one ranked list and one gold set.

Conventions (as in BEIR/pytrec_eval, stated because aggregates depend on them):
- the ranked list is deduplicated first (a repeated API counts once, at its first rank);
- recall@k with an empty gold set is undefined: it returns None and aggregation skips it;
- precision@k divides by k (not by the number retrieved), so a short list is penalised;
  with an empty retrieval it is 0.0; k larger than the list is allowed;
- relevance is binary (an API is gold or not): MRR@k is 1/rank of the first gold item in the top k
  (0.0 when none, also for an empty gold set); nDCG@k uses the gain 1/log2(rank + 1) and the ideal
  ranking of min(|gold|, k) gold items, and is None for an empty gold set, as recall is.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Sequence


def _top(ranked: Sequence[Hashable], k: int) -> list[Hashable]:
    if k < 1:
        raise ValueError("k must be at least 1")
    seen: set[Hashable] = set()
    out: list[Hashable] = []
    for item in ranked:
        if item not in seen:
            seen.add(item)
            out.append(item)
            if len(out) == k:
                break
    return out


def hits_at_k(ranked: Sequence[Hashable], gold: Collection[Hashable], k: int) -> int:
    """How many distinct gold items appear in the top k."""
    gold = set(gold)
    return sum(1 for item in _top(ranked, k) if item in gold)


def recall_at_k(ranked: Sequence[Hashable], gold: Collection[Hashable], k: int) -> float | None:
    """Share of the gold set found in the top k; None when the gold set is empty."""
    if not gold:
        return None
    return hits_at_k(ranked, gold, k) / len(set(gold))


def precision_at_k(ranked: Sequence[Hashable], gold: Collection[Hashable], k: int) -> float:
    """Gold items in the top k, divided by k."""
    return hits_at_k(ranked, gold, k) / k


def hit_at_k(ranked: Sequence[Hashable], gold: Collection[Hashable], k: int) -> float:
    """1.0 if any gold item is in the top k, else 0.0 (also 0.0 for an empty gold set)."""
    return 1.0 if hits_at_k(ranked, gold, k) else 0.0


def mrr_at_k(ranked: Sequence[Hashable], gold: Collection[Hashable], k: int) -> float:
    """Reciprocal rank of the first gold item within the top k; 0.0 when there is none."""
    gold = set(gold)
    return next((1.0 / rank for rank, item in enumerate(_top(ranked, k), 1) if item in gold), 0.0)


def ndcg_at_k(ranked: Sequence[Hashable], gold: Collection[Hashable], k: int) -> float | None:
    """Binary-gain nDCG@k: DCG of the top k over the DCG of an ideal top k; None when the gold set is empty."""
    gold = set(gold)
    if not gold:
        return None
    dcg = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(_top(ranked, k), 1) if item in gold)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def gold_flags(ranked: Sequence[Hashable], gold: Collection[Hashable]) -> list[bool]:
    """Per rank: is this item gold? (for marking hits in tables and the UI)."""
    gold = set(gold)
    return [item in gold for item in ranked]


SCORE_NAMES = {"recall": "recall", "precision": "precision", "hit": "hit", "mrr": "MRR", "ndcg": "nDCG"}


def scores_at_k(ranked: Sequence[Hashable], gold: Collection[Hashable], k: int) -> dict[str, float | None]:
    """Every per-query metric at k, keyed as SCORE_NAMES: what the Inspector shows for one query."""
    return {"recall": recall_at_k(ranked, gold, k), "precision": precision_at_k(ranked, gold, k),
            "hit": hit_at_k(ranked, gold, k), "mrr": mrr_at_k(ranked, gold, k), "ndcg": ndcg_at_k(ranked, gold, k)}
