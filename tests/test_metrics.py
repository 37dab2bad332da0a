from __future__ import annotations

import pytest

from core.study import metrics


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
