"""Edited stubs (core.study.edited_stubs): searched exactly as PtR and the hybrid search a model's, labelled as
edited wherever shown, carried in a URL intact, refused in one line when they cannot be searched, and diffed against
the unedited stubs' top k."""
from __future__ import annotations

import json

import pytest

from core.retrieval.archs import WrittenStubs, arch
from core.retrieval.discovery import QueryError, Retriever, clean_query
from core.retrieval.records import Stub
from core.settings import Settings
from core.study.edited_stubs import (EDITED, MAX_PARAM_CHARS, StubsError, check_stubs, edit_diff, from_param,
                                     search_edited, stubs_from_json, to_param)
from core.study.one_query import run_query
from tests.helpers import CV, FX, HD, IP, WX

QUERY = "Find hotels in London, check the currency exchange rate and look up my IP address."


def test_the_stubs_a_ptr_run_wrote_give_exactly_its_hits(small_retriever: Retriever, settings: Settings) -> None:
    outcome = run_query(QUERY, 3, small_retriever, settings, plans=False)
    stubs = outcome.get("ptr").writing.stubs
    assert len(stubs) >= 2  # the heuristic's sub-requests: the merge is exercised
    edited = search_edited(f"  {QUERY}\n", stubs, 3, small_retriever)  # cleaned as run_query cleans it
    for name in ("ptr", "hybrid"):
        assert edited.block(name).hits == outcome.get(name).hits
        assert edited.get(name).hits == arch(name).retrieve(clean_query(QUERY), WrittenStubs(stubs), 3,
                                                            small_retriever).hits
    ptr = edited.block("ptr")
    assert ptr.writing.stubs == stubs and not ptr.writing.fallback and ptr.writing.usage.total == 0
    for name in ("ptr", "hybrid"):  # never shown as a model's output
        assert edited.block(name).backend_label == EDITED and edited.block(name).to_json()["backend_label"] == EDITED


def test_zero_stubs_leave_ptr_empty_and_the_hybrid_on_rtps_hits(small_retriever: Retriever) -> None:
    edited = search_edited(QUERY, [], 5, small_retriever)
    assert edited.stubs == () and edited.ptr is None and edited.block("ptr") is None
    rtp = arch("rtp").retrieve(clean_query(QUERY), None, 5, small_retriever)
    assert [(h.key, h.score) for h in edited.hybrid.hits] == [(h.key, h.score) for h in rtp.hits]


def test_bad_query_or_k_is_refused_before_any_search(small_retriever: Retriever) -> None:
    with pytest.raises(QueryError):
        search_edited("   ", [Stub("get_weather")], 5, small_retriever)
    with pytest.raises(QueryError):
        search_edited(QUERY, [Stub("get_weather")], 0, small_retriever)


def test_edit_diff_counts_gained_lost_and_gold_with_recall_before_and_after() -> None:
    diff = edit_diff([HD, CV, FX, WX], [HD, WX, IP], {CV, WX, ("Nowhere", "x")}, 3)
    assert diff.gained == (WX, IP)  # WX was 4th: outside the top 3 before
    assert diff.lost == (CV, FX)
    assert diff.gold_found == (WX,) and diff.gold_missed == (CV,)
    assert diff.recall_before == pytest.approx(1 / 3) and diff.recall_after == pytest.approx(1 / 3)
    assert diff.recall_change == pytest.approx(0.0)
    better = edit_diff([HD], [CV, WX], {CV, WX}, 2)
    assert (better.recall_before, better.recall_after, better.recall_change) == (0.0, 1.0, 1.0)
    no_gold = edit_diff([HD], [CV], None, 5)
    assert no_gold.gold_found == () and no_gold.recall_before is None and no_gold.recall_change is None


def test_edit_diff_of_one_edited_stub_matches_the_searches(small_retriever: Retriever) -> None:
    stubs = [Stub("search_hotels", "hotels in London"), Stub("weather_forecast", "weather forecast for a city")]
    edited = [stubs[0], Stub("get_exchange_rate", "currency rate")]  # the second stub rewritten
    before = search_edited(QUERY, stubs, 3, small_retriever).ptr.keys
    after = search_edited(QUERY, edited, 3, small_retriever).ptr.keys
    diff = edit_diff(before, after, {FX, IP}, 3)
    assert diff.gained == tuple(key for key in after if key not in before) and FX in diff.gained
    assert diff.lost == tuple(key for key in before if key not in after) and WX in diff.lost
    assert set(diff.gold_found) == {FX, IP} - set(before) and diff.gold_missed == ()
    assert diff.recall_before < diff.recall_after == 1.0


AWKWARD = (
    Stub("render_markdown", "**bold** _it_ `code` [a link](https://x.test/?a=1&b=2#frag) | table |"),
    Stub("<b>html</b>", "<script>alert('x')</script> &amp; &lt;tag&gt; </textarea>"),
    Stub("weather_forecast 🌦️", "天气预报 in Zürich — ☃ 👩‍👩‍👧 emoji"),
    Stub('say "hi"', "it's \"quoted\" with a \\backslash\\ and a %20 and a + sign"),
    Stub("multi_line", "line one\nline two\r\n\ttabbed"),
    Stub("bare_name"),
    Stub("long_reasoning", "x" * 25_000 + "é" * 25_000),  # 50 KB of reasoning
)


def test_to_param_and_from_param_round_trip_any_text() -> None:
    stubs = check_stubs(AWKWARD)
    assert stubs == AWKWARD  # nothing here needs stripping
    param = to_param(stubs)
    assert "\n" not in param and "\r" not in param  # one URL parameter's value
    assert len(param) > MAX_PARAM_CHARS  # too long for a link (the page says so), yet still exact
    assert from_param(param) == stubs
    short = AWKWARD[:-1]
    assert from_param(to_param(short)) == short
    assert json.loads(to_param([Stub("bare_name")])) == [["bare_name"]]
    assert to_param(()) == "[]" and from_param("[]") == ()


def test_stubs_from_json_reads_each_shape() -> None:
    expected = (Stub("search_hotels", "hotels"), Stub("get_rate"))
    assert stubs_from_json([{"name": "search_hotels", "reasoning": "hotels"}, {"name": "get_rate"}]) == expected
    assert stubs_from_json([["search_hotels", "hotels"], ["get_rate"]]) == expected
    assert stubs_from_json([["search_hotels", "hotels"], "get_rate"]) == expected
    assert stubs_from_json({"stubs": [{"name": " search_hotels ", "reasoning": " hotels "},
                                      {"name": "get_rate", "reasoning": None, "top1": {}}]}) == expected


@pytest.mark.parametrize("data, words", [
    ({"name": "x"}, 'got an object without "stubs"'),
    ("search_hotels", "got str"),
    (None, "got NoneType"),
    ([1], "stub 1 is not an object"),
    ([{"name": "a"}, {"reasoning": "no name"}], "stub 2 is not an object"),
    ([{"name": 5}], "stub 1 is not an object"),
    ([{"name": "a", "reasoning": ["x"]}], "stub 1 is not an object"),
    ([["a", "b", "c"]], "stub 1 is not an object"),
    ([[]], "stub 1 is not an object"),
    ([f"stub_{i}" for i in range(11)], "11 stubs given; PtR searches at most 10"),
    ([{"name": "   ", "reasoning": "x"}], "stub 1 has no name with a letter or digit"),
    ([{"name": "ok"}, {"name": "🙂 !!"}], "stub 2 has no name with a letter or digit"),
    ([{"name": "ok", "reasoning": "x" * 100_001}], "stub 1's reasoning has 100,001 characters"),
    ([{"name": "bad\ud800"}], "stub 1's name is not valid UTF-8"),
    ([{"name": "ok", "reasoning": "a \ufffd b"}], "stub 1's reasoning is not valid UTF-8"),
])
def test_unusable_stubs_are_one_line_naming_the_problem(data: object, words: str) -> None:
    with pytest.raises(StubsError) as caught:
        stubs_from_json(data)
    message = str(caught.value)
    assert words in message and "\n" not in message
    assert isinstance(caught.value, ValueError)  # the CLI prints a ValueError as one error line, exit 2


@pytest.mark.parametrize("text, words", [("not json", "not JSON"), ('[["a"]', "not JSON"),
                                         ("[" * 100_000, "not JSON"), ('{"stubs": 3}', "got int")])
def test_a_bad_link_is_one_line(text: str, words: str) -> None:
    with pytest.raises(StubsError, match=words) as caught:
        from_param(text)
    assert "\n" not in str(caught.value)
