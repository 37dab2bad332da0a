from __future__ import annotations

import numpy as np
import pytest

from core.discovery import QueryError, Retriever, Stub, clean_query, merge_stub_hits, ptr_retrieve, rtp
from core.evaluate import ptr_batch, rtp_batch


def test_merge_hand_computed_example() -> None:
    per_stub = [
        ("find_hotels", np.array([0.9, 0.5, 0.4]), np.array([3, 7, 1])),
        ("get_rate", np.array([0.8, 0.6, 0.5]), np.array([7, 2, 3])),
    ]
    merged, width = merge_stub_hits(per_stub, 3)
    # union {3, 7, 1, 2}; best scores: 3->0.9 (hotels), 7->0.8 (rate), 2->0.6, 1->0.4
    assert width == 4
    assert merged == [(3, 0.9, "find_hotels"), (7, 0.8, "get_rate"), (2, 0.6, "get_rate")]


def test_merge_ties_go_to_lower_row_and_first_stub() -> None:
    per_stub = [("a", np.array([0.5]), np.array([9])), ("b", np.array([0.5, 0.5]), np.array([4, 9]))]
    merged, width = merge_stub_hits(per_stub, 2)
    assert merged == [(4, 0.5, "b"), (9, 0.5, "a")] and width == 2


def test_rtp_ranks_by_similarity(small_retriever: Retriever) -> None:
    found = rtp("currency exchange rate", 3, small_retriever)
    assert found.hits[0].key == ("Currency", "exchange rate")
    assert [h.rank for h in found.hits] == [1, 2, 3]
    assert all(a.score >= b.score for a, b in zip(found.hits, found.hits[1:]))
    assert found.top1_score == found.hits[0].score


def test_ptr_attributes_hits_to_stubs(small_retriever: Retriever) -> None:
    stubs = (Stub("search_hotels", "find hotels in a city"), Stub("exchange_rate", "currency exchange rate"))
    found = ptr_retrieve(stubs, 4, small_retriever)
    by_key = {h.key: h.stub for h in found.hits}
    assert by_key[("Hotels", "search hotels")] == "search_hotels"
    assert by_key[("Currency", "exchange rate")] == "exchange_rate"
    assert found.search_width >= 4 and found.stubs == stubs


def test_batch_paths_match_single(small_retriever: Retriever) -> None:
    texts = ["find hotels", "a random joke please"]
    for text, batched in zip(texts, rtp_batch(texts, 3, small_retriever)):
        assert batched.keys == rtp(text, 3, small_retriever).keys
    stubs = [(Stub("hotels", "find hotels"), Stub("joke", "random joke")), (Stub("ip", "ip address"),)]
    per_k = ptr_batch(stubs, [1, 3], small_retriever)
    for i, s in enumerate(stubs):
        for k in (1, 3):
            single = ptr_retrieve(s, k, small_retriever)
            assert per_k[k][i].keys == single.keys
            assert per_k[k][i].search_width == single.search_width
        for stub, (row, score) in zip(s, per_k[1][i].extra["stub_top1"]):
            best = rtp(stub.text(), 1, small_retriever).hits[0]  # each stub's own best, before merging
            assert small_retriever.registry.apis[row].key == best.key and score == pytest.approx(best.score)


@pytest.mark.parametrize("bad", ["", "   \n\t", None])
def test_empty_query_is_refused(bad, small_retriever: Retriever) -> None:
    with pytest.raises(QueryError, match="empty"):
        rtp(bad, 5, small_retriever)


def test_huge_and_unicode_queries(small_retriever: Retriever) -> None:
    assert len(rtp("hotel " * 16_000, 5, small_retriever).hits) == 5  # 96k characters
    assert len(rtp("Wetter 🌦️ für Zürich — 天气预报", 5, small_retriever).hits) == 5
    with pytest.raises(QueryError, match="limit"):
        clean_query("x" * 100_001)


def test_stub_text_modes() -> None:
    assert Stub("get_rate", "why").text() == "get_rate: why"
    assert Stub("get_rate", "why").text("name") == "get_rate"
    assert Stub("q").text() == "q"
    with pytest.raises(ValueError):
        Stub("a").text("other")
