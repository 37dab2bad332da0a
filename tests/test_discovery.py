from __future__ import annotations

import numpy as np
import pytest

from core.retrieval.archs import QUERY_LABEL, WrittenStubs, arch, discover
from core.retrieval.discovery import QueryError, Retriever, Stub, clean_query, merge_stub_hits
from tests.helpers import hybrid_of, ptr_of, rtp_of


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
    found = rtp_of("currency exchange rate", 3, small_retriever)
    assert found.hits[0].key == ("Currency", "exchange rate")
    assert [h.rank for h in found.hits] == [1, 2, 3]
    assert all(a.score >= b.score for a, b in zip(found.hits, found.hits[1:]))
    assert found.top1_score == found.hits[0].score


def test_ptr_attributes_hits_to_stubs(small_retriever: Retriever) -> None:
    stubs = (Stub("search_hotels", "find hotels in a city"), Stub("exchange_rate", "currency exchange rate"))
    found = ptr_of(stubs, 4, small_retriever)
    by_key = {h.key: h.stub for h in found.hits}
    assert by_key[("Hotels", "search hotels")] == "search_hotels"
    assert by_key[("Currency", "exchange rate")] == "exchange_rate"
    assert found.search_width == 7 and found.stubs == stubs  # the union of both stubs' top 4: one API is in both


def test_batch_paths_match_single(small_retriever: Retriever) -> None:
    texts = ["find hotels", "a random joke please"]
    for text, batched in zip(texts, discover(arch("rtp"), texts, None, [3], small_retriever)[3]):
        assert batched.keys == rtp_of(text, 3, small_retriever).keys
    stubs = [(Stub("hotels", "find hotels"), Stub("joke", "random joke")), (Stub("ip", "ip address"),)]
    per_k = discover(arch("ptr"), ["", ""], [WrittenStubs(s) for s in stubs], [1, 3], small_retriever)
    for i, s in enumerate(stubs):
        for k in (1, 3):
            single = ptr_of(s, k, small_retriever)
            assert per_k[k][i].keys == single.keys
            assert per_k[k][i].search_width == single.search_width
        for stub, (row, score) in zip(s, per_k[1][i].top1):
            best = rtp_of(stub.text(), 1, small_retriever).hits[0]  # each stub's own best, before merging
            assert small_retriever.registry.apis[row].key == best.key and score == pytest.approx(best.score)


def test_hybrid_is_the_best_similarity_merge_of_rtp_and_ptr(small_retriever: Retriever) -> None:
    query = "find hotels in London and the currency exchange rate"
    stubs = (Stub("search_hotels", "find hotels in a city"), Stub("joke", "tell a random joke"))
    k = 4
    found = hybrid_of(query, stubs, k, small_retriever)
    assert found.arch == "hybrid" and found.stubs == stubs and len(found.hits) == k
    # Exactly PtR's merge with the raw query as one more search: both full rankings, best score per API.
    by_rtp = {h.key: h.score for h in rtp_of(query, len(small_retriever.registry), small_retriever).hits}
    by_ptr = {h.key: h.score for h in ptr_of(stubs, len(small_retriever.registry), small_retriever).hits}
    best = {key: max(by_rtp[key], by_ptr[key]) for key in by_rtp}
    assert [h.key for h in found.hits] == sorted(best, key=lambda key: -best[key])[:k]
    for hit in found.hits:
        assert hit.score == pytest.approx(best[hit.key])
        assert (hit.stub == QUERY_LABEL) == (by_rtp[hit.key] >= by_ptr[hit.key])  # the query wins ties: listed first
    assert {h.stub for h in found.hits} <= {QUERY_LABEL, "search_hotels", "joke"}
    alone = hybrid_of(query, (), k, small_retriever)  # no stubs: RtP exactly
    assert alone.keys == rtp_of(query, k, small_retriever).keys and {h.stub for h in alone.hits} == {QUERY_LABEL}
    batched = discover(arch("hybrid"), [query, "a random joke"], [WrittenStubs(stubs), WrittenStubs(())], [2, k],
                       small_retriever)
    assert batched[k][0].keys == found.keys and batched[2][0].keys == found.keys[:2]
    assert batched[k][1].keys == rtp_of("a random joke", k, small_retriever).keys
    with pytest.raises(QueryError):
        hybrid_of("  ", stubs, k, small_retriever)


@pytest.mark.parametrize("bad", ["", "   \n\t", None])
def test_empty_query_is_refused(bad, small_retriever: Retriever) -> None:
    with pytest.raises(QueryError, match="empty"):
        rtp_of(bad, 5, small_retriever)


def test_huge_and_unicode_queries(small_retriever: Retriever) -> None:
    assert len(rtp_of("hotel " * 16_000, 5, small_retriever).hits) == 5  # 96k characters
    assert len(rtp_of("Wetter 🌦️ für Zürich — 天气预报", 5, small_retriever).hits) == 5
    with pytest.raises(QueryError, match="limit"):
        clean_query("x" * 100_001)


def test_stub_text_modes() -> None:
    assert Stub("get_rate", "why").text() == "get_rate: why"
    assert Stub("get_rate", "why").text("name") == "get_rate"
    assert Stub("q").text() == "q"
    with pytest.raises(ValueError):
        Stub("a").text("other")
