"""One query's scores against a gold definition, and their mean over a subset."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.data.toolbench import Query
from core.study import metrics
from core.study.stats import summarise


@dataclass(frozen=True)
class QueryScore:
    uid: str
    k: int
    recall: float | None
    precision: float
    hit: float


def score_query(query: Query, ranked: Sequence[tuple[str, str]], gold: str, k: int) -> QueryScore:
    gold_set = query.gold(gold)
    return QueryScore(query.uid, k, metrics.recall_at_k(ranked, gold_set, k),
                      metrics.precision_at_k(ranked, gold_set, k), metrics.hit_at_k(ranked, gold_set, k))


def aggregate(scores: Sequence[QueryScore]) -> dict:
    recall, precision, hit = (summarise(getattr(s, f) for s in scores) for f in ("recall", "precision", "hit"))
    return {"n": len(scores), "recall": recall.mean, "recall_std": recall.std, "precision": precision.mean,
            "precision_std": precision.std, "hit_rate": hit.mean}
