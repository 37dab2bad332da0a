from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from core.data.registry import UNKNOWN_CATEGORY, Registry, stratified_rows
from core.data.toolbench import Api


def make_registry() -> Registry:
    apis = [Api(f"T{i}", "a", "A" if i < 600 else ("B" if i < 900 else ""), "") for i in range(1000)]
    return Registry("synthetic", tuple(apis))


def test_lookup_and_documents(small_registry: Registry) -> None:
    assert small_registry.get((" Weather", "forecast")).category == "Weather"
    assert small_registry.get(("Weather", "forecast")) is None  # names are byte-exact
    assert small_registry.documents[0] == "Hotels/search hotels: Find hotels in a city with prices"
    assert small_registry.rows_of([("Jokes", "random joke"), ("nope", "x"), ("Hotels", "search hotels")]) == [0, 6]


def test_content_hash_changes_with_text(small_registry: Registry) -> None:
    changed = Registry("small", small_registry.apis[:-1] + (Api("Football", "transfers", "", "other"),))
    assert changed.content_hash != small_registry.content_hash
    assert Registry("x", small_registry.apis).content_hash == small_registry.content_hash


def test_category_counts_has_unknown_stratum(small_registry: Registry) -> None:
    counts = small_registry.category_counts()
    assert counts[UNKNOWN_CATEGORY] == 1 and counts["Travel"] == 2


def test_stratified_rows_keeps_gold_and_proportions() -> None:
    registry = make_registry()
    must = [5, 650, 950]
    rows = stratified_rows(registry, 100, must, seed=3)
    assert len(rows) == len(set(rows.tolist())) == 100
    assert set(must) <= set(rows.tolist())
    cats = Counter(registry.apis[r].category or UNKNOWN_CATEGORY for r in rows if r not in must)
    assert cats == {"A": 58, "B": 29, UNKNOWN_CATEGORY: 10}  # 97 distractors split 599:299:99
    again = stratified_rows(registry, 100, must, seed=3)
    np.testing.assert_array_equal(rows, again)
    assert not np.array_equal(rows, stratified_rows(registry, 100, must, seed=4))


def test_stratified_rows_edge_sizes() -> None:
    registry = make_registry()
    assert len(stratified_rows(registry, 5000, [1], seed=0)) == 1000
    with pytest.raises(ValueError, match="smaller"):
        stratified_rows(registry, 2, [1, 2, 3], seed=0)
