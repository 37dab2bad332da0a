"""Per-query retrieval metrics: pure functions of one ranked list and one gold set.

Conventions (as in BEIR/pytrec_eval, stated because aggregates depend on them):
- the ranked list is deduplicated first (a repeated API counts once, at its first rank);
- recall@k with an empty gold set is undefined: it returns None and aggregation skips it;
- precision@k divides by k (not by the number retrieved), so a short list is penalised;
  with an empty retrieval it is 0.0; k larger than the list is allowed.
"""
from __future__ import annotations

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


def gold_flags(ranked: Sequence[Hashable], gold: Collection[Hashable]) -> list[bool]:
    """Per rank: is this item gold? (for marking hits in tables and the UI)."""
    gold = set(gold)
    return [item in gold for item in ranked]
