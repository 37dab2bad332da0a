"""One query's scores against a gold definition, and their mean over a subset."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.data.toolbench import DEFAULT_GOLD, Query, gold_definition
from core.evaluation import metrics
from core.evaluation.run_means import RUN_MEANS
from core.evaluation.stats import summarise


@dataclass(frozen=True)
class QueryScore:
    uid: str
    gold: str
    k: int
    recall: float | None
    precision: float
    hit: float

    def columns(self) -> dict[str, float | None]:
        """The scores under the store's column names, which the declared run means read."""
        gold = gold_definition(self.gold)
        return {gold.column("recall"): self.recall, gold.column("precision"): self.precision,
                gold.column("hit"): self.hit}


def score_query(query: Query, ranked: Sequence[tuple[str, str]], gold: str, k: int) -> QueryScore:
    gold_set = query.gold(gold)
    return QueryScore(query.uid, gold, k, metrics.recall_at_k(ranked, gold_set, k),
                      metrics.precision_at_k(ranked, gold_set, k), metrics.hit_at_k(ranked, gold_set, k))


def aggregate(scores: Sequence[QueryScore]) -> dict:
    """n, the means over the queries as the store's run means (core.evaluation.run_means: the report gives the same
    bits for the same rows), and the spread of recall and precision over the queries."""
    gold = gold_definition(scores[0].gold) if scores else DEFAULT_GOLD  # with no score every mean is NaN, any gold
    rows = [s.columns() for s in scores]
    recall, precision, hit = (RUN_MEANS[gold.column(score)].mean(rows) for score in ("recall", "precision", "hit"))
    return {"n": len(scores), "recall": recall, "recall_std": summarise(s.recall for s in scores).std,
            "precision": precision, "precision_std": summarise(s.precision for s in scores).std, "hit_rate": hit}
