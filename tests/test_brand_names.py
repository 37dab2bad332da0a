"""The Stubs page's brand-name erasure is counted, not asserted of every PtR loss."""
from __future__ import annotations

import pandas as pd

from core.analysis.brand_names import brand_name_marks, erasure_counts, tools_named
from core.data.toolbench import Query


def query(qid: int, text: str, tools: tuple[str, ...]) -> Query:
    gold = tuple((tool, "api") for tool in tools)
    return Query("G1_instruction", "G1", qid, text, gold, gold)


def test_a_tool_name_counts_only_as_whole_words() -> None:
    assert tools_named("Show me the Spotify top tracks", ["Spotify", "Deezer"]) == ["Spotify"]
    assert tools_named("the hotels.com provider lists", ["hotels_com_provider"]) == ["hotels_com_provider"]
    assert tools_named("spotifyish", ["Spotify"]) == [] and tools_named("an AI tool", ["AI"]) == []


def test_erasure_is_a_named_tool_the_stubs_dropped() -> None:
    queries = {("G1_instruction", 1): query(1, "Top tracks on Spotify, please", ("Spotify",)),
               ("G1_instruction", 2): query(2, "Find Spotify playlists", ("Spotify",)),
               ("G1_instruction", 3): query(3, "What is the weather tomorrow?", ("OpenWeather",))}
    losses = pd.DataFrame({"subset": ["G1_instruction"] * 4, "query_id": [1, 2, 3, 4],
                           "stub_names": ["get_top_tracks, search_music", "search_spotify_playlists", "get_forecast",
                                          "anything"]})
    marked = brand_name_marks(losses, queries)
    assert marked["tool_in_request"].tolist() == ["Spotify", "Spotify", "", ""]  # query 4: text unknown
    assert marked["stubs_keep_it"].tolist() == [False, True, None, None]
    assert erasure_counts(marked) == (4, 2, 1)
