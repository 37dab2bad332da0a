from __future__ import annotations

import pytest

from core.evaluation import metrics


def test_recall_precision_basic() -> None:
    ranked = ["a", "b", "c", "d"]
    gold = {"b", "d", "x"}
    assert metrics.recall_at_k(ranked, gold, 2) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(ranked, gold, 4) == pytest.approx(2 / 3)
    assert metrics.precision_at_k(ranked, gold, 2) == pytest.approx(0.5)
    assert metrics.hit_at_k(ranked, gold, 1) == 0.0
    assert metrics.hit_at_k(ranked, gold, 2) == 1.0


def test_empty_gold_is_undefined_recall_and_zero_precision() -> None:
    assert metrics.recall_at_k(["a"], set(), 5) is None
    assert metrics.precision_at_k(["a"], set(), 5) == 0.0
    assert metrics.hit_at_k(["a"], set(), 5) == 0.0


def test_empty_retrieval() -> None:
    assert metrics.recall_at_k([], {"a"}, 5) == 0.0
    assert metrics.precision_at_k([], {"a"}, 5) == 0.0


def test_duplicates_count_once() -> None:
    ranked = ["a", "a", "a", "b"]
    assert metrics.hits_at_k(ranked, {"a", "b"}, 2) == 2  # dedup keeps a, b as the top 2
    assert metrics.recall_at_k(ranked, {"a", "b"}, 2) == 1.0
    assert metrics.recall_at_k(["a", "b"], ["a", "a"], 5) == 1.0  # duplicate gold collapses


def test_k_larger_than_list_divides_by_k() -> None:
    assert metrics.precision_at_k(["a"], {"a"}, 5) == pytest.approx(0.2)
    assert metrics.recall_at_k(["a"], {"a"}, 50) == 1.0


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError):
        metrics.recall_at_k(["a"], {"a"}, 0)


def test_gold_flags() -> None:
    assert metrics.gold_flags([("t", "a"), ("t", "b")], {("t", "b")}) == [False, True]


def test_mrr_is_the_first_gold_rank_within_k() -> None:
    ranked = ["a", "b", "c", "d"]
    assert metrics.mrr_at_k(ranked, {"c", "d"}, 4) == pytest.approx(1 / 3)
    assert metrics.mrr_at_k(ranked, {"c", "d"}, 2) == 0.0  # the first gold item sits below the cut
    assert metrics.mrr_at_k(["a", "a", "b"], {"b"}, 2) == pytest.approx(1 / 2)  # a repeat takes no rank
    assert metrics.mrr_at_k(ranked, set(), 4) == 0.0


def test_ndcg_binary_gain_against_an_ideal_top_k() -> None:
    import math

    ranked = ["a", "b", "c"]
    # gold at ranks 2 and 3 of 3; ideal puts two gold items at ranks 1 and 2
    assert metrics.ndcg_at_k(ranked, {"b", "c"}, 3) == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    # five gold items, k = 2: the ideal holds two of them, so a perfect top 2 scores 1.0
    assert metrics.ndcg_at_k(["a", "b"], {"a", "b", "c", "d", "e"}, 2) == pytest.approx(1.0)
    assert metrics.ndcg_at_k(ranked, set(), 3) is None
    assert metrics.ndcg_at_k([], {"a"}, 3) == 0.0
