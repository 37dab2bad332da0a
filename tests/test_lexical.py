"""BM25 (core/retrieval/lexical.py): its scores against a plain-Python BM25, its tokens, its exact top-k, and
RtP, PtR and the hybrid running on it through the architectures' one retrieval."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from core.data.loaders import registry_for
from core.data.registry import Registry
from core.data.toolbench import Api
from core.retrieval.archs import WrittenStubs, arch, discover
from core.retrieval.discovery import Retriever, Stub
from core.retrieval.lexical import B, K1, BM25Index, bm25_retriever, fold_plural, tokens, top_k, STOP_WORDS
from core.retrieval.memo import memoised
from core.settings import DataNotFoundError, Settings
from tests.helpers import FX, H, IP, JK, rtp_of

CORPUS = (  # 20 short API documents: repeated terms, lengths from 3 to 20 terms, shared and rare words
    ("Hotels", "searchHotels", "Find hotels in a city with prices; hotels hotels"),
    ("Hotels", "hotel_details", "Details and reviews of one hotel"),
    ("Booking", "GetHotelRooms", "Rooms free in a hotel on a date"),
    ("Currency", "GetCurrencyRate", "Currency exchange rate between two currencies"),
    ("Currency", "convert", "Convert an amount from one currency to another currency"),
    ("FX", "historicalRates", "Historical exchange rates by date"),
    ("IP Lookup", "ipInfo", "Look up geolocation of an IP address"),
    ("IP Lookup", "ipv4ToCity", "City of an IPv4 address"),
    ("Weather", "forecast", "Weather forecast for a city, 7 days"),
    ("Weather", "current_weather", "Current weather: temperature, wind and rain"),
    ("Jokes", "random joke", "A random joke"),
    ("Jokes", "jokeByCategory", "A joke from a category"),
    ("Football", "playerStats", "Statistics of a football player"),
    ("Football", "transfers", "Transfers of football players between clubs"),
    ("Movies", "searchMovies", "Search movies by title, year or actor"),
    ("Music", "lyrics", "Song lyrics by artist and title"),
    ("Maps", "geocode", "Address to latitude and longitude"),
    ("Email", "validate_email", "Check that an email address exists"),
    ("SMS", "sendSMS", "Send an SMS to a phone number"),
    ("News", "top_headlines", "Top news headlines by country and category"),
)
QUERIES = ("find hotels in a city", "hotel hotel hotel rooms", "exchange rate rate zzzunknownzzz",
           "getExchangeRate", "weather", "qwertyuiop", "the of and to", "", "!!! ??? ...")


def corpus_registry(rows=CORPUS) -> Registry:
    return Registry("corpus", tuple(Api(tool, api, "", text) for tool, api, text in rows))


def reference_scores(documents: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    """Lucene's BM25 from its definition, term by term (a repeated query term counts each time)."""
    n = len(documents)
    avgdl = sum(len(d) for d in documents) / n
    df = Counter(term for d in documents for term in set(d))
    out = []
    for d in documents:
        tf, score = Counter(d), 0.0
        for term in query:
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] / (tf[term] + k1 * (1 - b + b * len(d) / avgdl))
        out.append(score)
    return out


def assert_ranked(scores: np.ndarray, rows: np.ndarray) -> None:
    """Best first, ties by the lower row."""
    for (s1, r1), (s2, r2) in zip(zip(scores, rows), zip(scores[1:], rows[1:])):
        assert s1 > s2 or (s1 == s2 and r1 < r2)


# ------------------------------------------------------------------ scores against the reference

@pytest.mark.parametrize(("k1", "b"), [(K1, B), (1.5, 0.75), (0.9, 0.4)])
def test_scores_are_lucene_bm25_from_its_definition(k1: float, b: float) -> None:
    registry = corpus_registry()
    retriever = bm25_retriever(registry, k1, b)
    documents = [tokens(doc) for doc in registry.documents]
    scores, rows = retriever.index.batch_search(retriever.encode(QUERIES), len(registry))
    worst = 0.0
    for query, got, order in zip(QUERIES, scores, rows):
        expected = reference_scores(documents, tokens(query), k1, b)
        by_row = dict(zip(order.tolist(), got.tolist()))
        assert sorted(by_row) == list(range(len(registry)))
        worst = max(worst, *(abs(by_row[r] - e) for r, e in enumerate(expected)))
        assert_ranked(got, order)
    assert worst < 1e-5
    assert scores.dtype == np.float32 and rows.dtype == np.int64


def test_a_repeated_query_term_counts_each_time_and_unknown_terms_count_nothing() -> None:
    retriever = bm25_retriever(corpus_registry())
    once, twice, unknown = retriever.index.batch_search(retriever.encode(["weather", "weather weather",
                                                                          "weather zzzunknownzzz"]), 3)[0]
    np.testing.assert_allclose(twice, 2 * once, rtol=1e-6)
    np.testing.assert_array_equal(unknown, once)


def test_a_query_with_no_known_term_gives_the_first_rows_at_zero() -> None:
    retriever = bm25_retriever(corpus_registry())
    for text in ("the of and", "qwertyuiop", "", "!!! ???"):
        scores, rows = retriever.index.search(retriever.encode([text]), 4)
        assert rows.tolist() == [0, 1, 2, 3] and scores.tolist() == [0.0] * 4


def test_the_stop_words_are_bm25s_english_list() -> None:
    from bm25s.stopwords import STOPWORDS_EN

    assert STOP_WORDS == frozenset(STOPWORDS_EN)


def test_the_model_id_names_the_variant_its_parameters_and_the_tokens() -> None:
    encoder = bm25_retriever(corpus_registry(), 1.5, 0.75).encoder
    assert encoder.model_id == "bm25s-lucene-k1=1.5-b=0.75-ident.stop33.plural"
    assert encoder.runtime == "bm25s" and encoder.dim == len(encoder.vocabulary)


# ------------------------------------------------------------------------------- the tokeniser

@pytest.mark.parametrize(("text", "expected"), [
    ("getExchangeRate", ["get", "exchange", "rate"]),
    ("GetCurrencyRate", ["get", "currency", "rate"]),
    ("search_hotels_by_city", ["search", "hotel", "city"]),
    ("HTTPServer2Go", ["http", "server", "2", "go"]),
    ("utf8 base64 covid19", ["utf", "8", "base", "64", "covid", "19"]),
    ("List APIs and URLs", ["list", "api", "url"]),
    ("Zürich café ÜberCool", ["zürich", "café", "über", "cool"]),
    ("天气预报 weather", ["天气预报", "weather"]),
    ("ｆｕｌｌｗｉｄｔｈ", ["fullwidth"]),  # NFKC
    ("Tool/api-name: a.b,c", ["tool", "api", "name", "b", "c"]),  # "a" is a stop word
    ("!!! --- ...", []),
    ("", []),
])
def test_tokens_split_identifiers_and_words(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(("word", "stem"), [
    ("hotels", "hotel"), ("currencies", "currency"), ("addresses", "address"), ("address", "address"),
    ("status", "status"), ("ips", "ip"), ("is", "is"), ("hotel", "hotel"), ("movies", "movy"), ("movie", "movie")])
def test_plurals_fold_by_harmans_rules(word: str, stem: str) -> None:
    assert fold_plural(word) == stem


# --------------------------------------------------------------------------- the exact top-k

def test_top_k_orders_ties_by_the_lower_column() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, size=(30, 50)).astype(np.float32)  # many ties at every score
    for k in (1, 3, 10, 49, 50, 80):
        got, columns = top_k(scores, k)
        for row, (g, c) in enumerate(zip(got, columns)):
            expected = np.lexsort((np.arange(50), -scores[row]))[:k]
            assert c.tolist() == expected.tolist() and g.tolist() == scores[row, expected].tolist()


def test_duplicate_documents_tie_in_row_order_and_k_is_capped_at_the_size() -> None:
    same = [("Hotels", f"search{i}", "Find hotels in a city") for i in range(3)]  # equal lengths and counts
    registry = corpus_registry((same[0], CORPUS[10], same[1], CORPUS[11], same[2]))
    retriever = bm25_retriever(registry)
    query = retriever.encode(["hotels"])
    scores, rows = retriever.index.search(query, 2)
    assert rows.tolist() == [0, 2] and scores[0] == scores[1] > 0
    scores, rows = retriever.index.batch_search(query, 100)
    assert rows.tolist() == [[0, 2, 4, 1, 3]] and scores.shape == (1, 5)
    for k in (0, -1):
        with pytest.raises(ValueError, match="at least 1"):
            retriever.index.batch_search(query, k)


def test_one_search_is_the_batch_row_bit_for_bit() -> None:
    retriever = bm25_retriever(corpus_registry())
    queries = retriever.encode(QUERIES)
    scores, rows = retriever.index.batch_search(queries, 6)
    for i in range(len(QUERIES)):
        one_scores, one_rows = retriever.index.search(queries[i], 6)
        np.testing.assert_array_equal(one_scores, scores[i])
        np.testing.assert_array_equal(one_rows, rows[i])
    with pytest.raises(ValueError, match="one query"):
        retriever.index.search(queries, 6)


def test_a_subindex_keeps_registry_rows_and_weighs_its_documents_alone() -> None:
    registry = corpus_registry()
    retriever = bm25_retriever(registry)
    kept = np.array([0, 3, 4, 5, 8, 13])
    sub = retriever.index.subindex(kept)
    assert isinstance(sub, BM25Index) and len(sub) == len(kept) and sub.rows.tolist() == kept.tolist()
    alone = bm25_retriever(Registry("kept", tuple(registry.apis[r] for r in kept)))
    for text in ("hotels in a city", "exchange rate currency", "football"):
        scores, rows = sub.search(retriever.encode([text]), 4)
        alone_scores, alone_rows = alone.index.search(alone.encode([text]), 4)
        assert set(rows.tolist()) <= set(kept.tolist())
        assert rows.tolist() == kept[alone_rows].tolist()
        np.testing.assert_allclose(scores, alone_scores, rtol=1e-6)
    nested = sub.subindex(np.array([1, 2]))
    assert nested.rows.tolist() == [3, 4]
    assert retriever.with_index(sub).corpus_vectors.shape == (len(registry), retriever.encoder.dim)


# ------------------------------------------------------------------ the architectures on BM25

STUBS = (Stub("search_hotels_by_city", "find hotels in a city"), Stub("getExchangeRate"))


@pytest.mark.parametrize("memo", [False, True], ids=["plain", "memoised"])
def test_rtp_ptr_and_hybrid_run_on_bm25(small_registry: Registry, memo: bool) -> None:
    retriever = bm25_retriever(small_registry)
    retriever = memoised(retriever) if memo else retriever
    assert rtp_of("Find hotels in Paris with prices", 1, retriever).keys == [H]
    assert rtp_of("Look up the geolocation of my IP address", 1, retriever).keys == [IP]
    queries = ["Find hotels in London and check the currency exchange rate", "Tell me a random joke"]
    written = [WrittenStubs(STUBS), WrittenStubs((Stub("getRandomJoke"),))]
    for name in ("rtp", "ptr", "hybrid"):
        per_k = discover(arch(name), queries, None if name == "rtp" else written, [1, 3], retriever)
        first, second = per_k[3]
        assert {H, FX} <= set(first.keys) and second.keys[0] == JK
        assert [d.keys for d in per_k[1]] == [d.keys[:1] for d in per_k[3]]
        assert all(h.score > 0 for d in per_k[3] for h in d.hits[:1])
    ptr = discover(arch("ptr"), queries[:1], written[:1], [3], retriever)[3][0]
    assert {h.key: h.stub for h in ptr.hits}[H] == "search_hotels_by_city"
    assert {h.key: h.stub for h in ptr.hits}[FX] == "getExchangeRate"


def test_the_hybrid_keeps_the_query_when_no_stub_matches(small_registry: Registry) -> None:
    retriever = bm25_retriever(small_registry)
    found = arch("hybrid").retrieve("Find hotels in Paris", WrittenStubs((Stub("qwertyuiop"),)), 2, retriever)
    assert found.hits[0].key == H and found.hits[0].stub == "(query)"


def test_the_retriever_holds_the_document_term_weights(small_registry: Registry) -> None:
    retriever: Retriever = bm25_retriever(small_registry)
    assert retriever.corpus_vectors.shape == (len(small_registry), retriever.encoder.dim)
    assert retriever.vectors_of([H]).nnz == len(set(tokens(small_registry.documents[0])))


@pytest.mark.slow
def test_hotels_in_london_finds_a_hotel_api_in_the_full_registry(settings: Settings) -> None:
    try:
        registry = registry_for(settings)
    except (DataNotFoundError, OSError) as exc:
        pytest.skip(f"the full registry cannot be loaded here: {exc}")
    assert registry.name == "full" and len(registry) > 40_000
    hits = rtp_of("find hotels in London", 5, bm25_retriever(registry)).hits
    assert any("hotel" in f"{h.tool_name} {h.api_name}".lower() for h in hits), hits
