"""The miss explanation: gold ranks deep in each list, cosines and name-only flags, against the discovery
functions and numpy."""
from __future__ import annotations

import numpy as np
import pytest

from core.data.registry import Registry
from core.data.toolbench import Api
from core.retrieval.archs import WrittenStubs
from core.retrieval.discovery import Retriever, Stub
from core.retrieval.index import VectorIndex
from core.study.gold_trace import topk_diff, trace_gold
from tests.helpers import CV, FX, H, IP, JK, SMALL_APIS, WX, FakeEncoder, hybrid_of, ptr_of, rtp_of

QUERY = "Find hotels in London and convert the currency"
STUBS = (Stub("search_hotels", "find a hotel in a city"), Stub("convert_currency", "convert money"))
WRITTEN = WrittenStubs(STUBS)
NAME_ONLY = Api("Ghost", "lookup", "Data", "", "name_only")
MISSING = ("Not There", "nothing")


@pytest.fixture
def retriever() -> Retriever:
    encoder = FakeEncoder()
    registry = Registry("small+", (*SMALL_APIS, NAME_ONLY))
    return Retriever(registry, encoder, VectorIndex(encoder.encode(registry.documents)))


def _rank(keys: list, key: tuple) -> int | None:
    return keys.index(key) + 1 if key in keys else None


def test_ranks_match_each_architecture_searched_as_deep(retriever: Retriever) -> None:
    gold = {H, CV, IP, NAME_ONLY.key}
    depth = 11
    traces = {(t.tool_name, t.api_name): t for t in trace_gold(QUERY, WRITTEN, gold, retriever, depth=depth)}
    rtp_keys = rtp_of(QUERY, depth, retriever).keys
    ptr_keys = ptr_of(STUBS, depth, retriever).keys
    hybrid_keys = hybrid_of(QUERY, STUBS, depth, retriever).keys
    assert set(traces) == gold
    for key, trace in traces.items():
        assert trace.ranks == (("rtp", _rank(rtp_keys, key)), ("ptr", _rank(ptr_keys, key)),
                               ("hybrid", _rank(hybrid_keys, key)))
        assert trace.rank("rtp") is not None  # 11 APIs, 11 deep: every API has a rank
    assert [t.name_only for t in traces.values()] == [key == NAME_ONLY.key for key in traces]


def test_beyond_depth_is_none(retriever: Retriever) -> None:
    depth = 2
    rtp_keys = rtp_of(QUERY, depth, retriever).keys
    beyond = next(a.key for a in retriever.registry.apis if a.key not in rtp_keys)
    (trace,) = trace_gold(QUERY, WRITTEN, {beyond}, retriever, depth=depth)
    assert trace.rank("rtp") is None


def test_cosines_are_the_vectors_inner_products(retriever: Retriever) -> None:
    (trace,) = trace_gold(QUERY, WRITTEN, {FX}, retriever)
    encoder = retriever.encoder
    api = encoder.encode([retriever.registry.get(FX).document])[0]
    query = encoder.encode([QUERY])[0]
    stubs = encoder.encode([s.text() for s in STUBS])
    assert trace.cos_query == pytest.approx(float(api @ query), abs=1e-6)
    best = int(np.argmax(stubs @ api))
    assert trace.cos_stub == pytest.approx(float(stubs[best] @ api), abs=1e-6)
    assert trace.best_stub == STUBS[best].name


def test_an_api_outside_the_registry_says_so(retriever: Retriever) -> None:
    (trace,) = trace_gold(QUERY, WRITTEN, {MISSING}, retriever)
    assert (trace.in_registry, trace.rank("rtp"), trace.rank("ptr"), trace.cos_query) == (False, None, None, None)


def test_hybrid_without_stubs_is_the_raw_query(retriever: Retriever) -> None:
    """After a stub fallback the hybrid searches the query alone, so its ranks are RtP's."""
    traces = trace_gold(QUERY, WrittenStubs((Stub(QUERY),), fallback=True), {H, WX, JK}, retriever)
    assert [t.rank("hybrid") for t in traces] == [t.rank("rtp") for t in traces]


def test_no_stubs_written_traces_only_what_needs_none(retriever: Retriever) -> None:
    (trace,) = trace_gold(QUERY, None, {H}, retriever)
    assert trace.archs == ("rtp",) and (trace.cos_stub, trace.best_stub) == (None, None)


def test_topk_diff_keeps_each_lists_order() -> None:
    diff = topk_diff([H, FX, IP], [CV, H, WX])
    assert (diff.shared, diff.only_rtp, diff.only_ptr) == ((H,), (FX, IP), (CV, WX))


def test_verdicts_name_the_reason() -> None:
    from core.study.gold_trace import GoldTrace, verdict

    def trace(rtp: int | None, ptr: int | None, hybrid: int | None, name_only: bool = False,
              in_registry: bool = True) -> GoldTrace:
        return GoldTrace("T", "a", in_registry, name_only, (("rtp", rtp), ("ptr", ptr), ("hybrid", hybrid)),
                         0.5, 0.4, "stub")

    assert verdict(trace(3, 7, 2), 5) == "found by RtP, hybrid"
    assert verdict(trace(9, 30, None), 5) == "near miss: best rank 9 (RtP), below the top 5"
    assert verdict(trace(None, None, None, name_only=True), 5) == (
        "beyond rank 100 under every architecture; name-only (its document is just the tool and API name)")
    assert verdict(trace(None, None, None, in_registry=False), 5) == "not in this registry: no architecture can find it"
