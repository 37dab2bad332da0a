"""One query's result is one type (core.study.query_result), whoever made it: the live path and the store give
the same blocks for the same query, its JSON is what `query --json` prints and reads back whole."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.agents.factory import Agents
from core.agents.llm import FailureKind, Usage
from core.agents.llm.jsonparse import failure_reason
from core.agents.planner import Plan
from core.analysis.reader import ResultsReader
from core.retrieval.memo import memoised
from core.retrieval.records import Hit
from core.settings import Settings
from core.study.hybrid import run_hybrid
from core.study.main_study import run_main
from core.study.query_result import ArchResult, QueryOutcome
from core.retrieval.archs import arch
from core.study.one_query import run_query
from core.store.store import Store
from ui.inspector_view import latency_text
from tests.helpers import FakePlanner, FakeStubWriter, bench_context, fake_agents, make_queries, make_retriever

K = 5


@pytest.fixture(scope="module")
def stored_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('results') / 'results.sqlite'}"
    store, retriever, queries = Store(url), memoised(make_retriever()), make_queries()
    context = bench_context(store, retriever, queries, commit="abc123")
    run_main(context, runs=1, k=K, concurrency=1, agents_for=fake_agents())
    run_hybrid(context)
    store.close()
    return url


def live(text: str, tmp_path: Path, **kwargs) -> QueryOutcome:
    settings = Settings.from_env(env={"CACHE_DIR": str(tmp_path)})
    return run_query(text, K, make_retriever(), settings, agents=Agents(FakeStubWriter(), FakePlanner()), **kwargs)


def test_live_json_is_the_clis_and_reads_back_whole(tmp_path: Path) -> None:
    query = make_queries()[6]  # two tools: several stubs
    result = live(query.query, tmp_path, gold=query.gold("api_list"))
    data = result.to_json()
    assert list(data) == ["query", "k", "rtp", "ptr", "hybrid"]
    assert list(data["rtp"]) == ["hits", "top1_score", "search_width", "latency_s", "recall", "precision", "plan"]
    assert list(data["ptr"])[-8:] == ["plan", "stubs", "stub_fallback", "stub_error", "stub_capped", "backend_label",
                                      "usage", "stub_latency_s"]
    assert list(data["hybrid"]) == ["hits", "top1_score", "search_width", "latency_s", "recall", "precision"]
    assert list(data["ptr"]["hits"][0]) == ["rank", "tool_name", "api_name", "category", "score", "stub", "gold"]
    assert data["ptr"]["usage"] == {"prompt_tokens": 30, "output_tokens": 12, "thoughts_tokens": 4, "total_tokens": 46}
    assert QueryOutcome.from_json(json.loads(json.dumps(data))) == result
    unmarked = live(query.query, tmp_path, archs=[arch("rtp")], plans=False).to_json()
    assert list(unmarked) == ["query", "k", "rtp"] and "gold" not in unmarked["rtp"]["hits"][0]


def test_the_store_and_the_live_path_give_one_type_for_one_query(stored_url: str, tmp_path: Path) -> None:
    query = make_queries()[6]
    stored = ResultsReader(stored_url).query_detail(query.subset, query.query_id, k=K)
    fresh = live(query.query, tmp_path).with_gold(query.gold("api_list"))
    assert type(stored) is type(fresh) is QueryOutcome
    assert [b.arch for b in stored.blocks] == [b.arch for b in fresh.blocks] == ["rtp", "ptr", "hybrid"]
    for mine, theirs in zip(stored.blocks, fresh.blocks):
        assert isinstance(mine, ArchResult) and mine.hits == theirs.hits
        assert (mine.gold.flags, mine.gold.recall, mine.gold.precision) == (
            theirs.gold.flags, theirs.gold.recall, theirs.gold.precision)
        assert (mine.plan is None) == (theirs.plan is None)
        if mine.plan is not None:  # the store rebuilds the plan the planner gave, field for field
            assert type(mine.plan) is type(theirs.plan) is Plan and mine.plan == theirs.plan
    assert stored.writing.stubs == fresh.writing.stubs and stored.writing.usage == fresh.writing.usage
    # Only the store keeps the other gold definition and the plan's pass; only the live path times retrieval.
    assert dict(stored.get("rtp").other_golds)["relevant"].recall is not None and fresh.get("rtp").other_golds == ()
    assert stored.get("rtp").latency_s is None and fresh.get("rtp").latency_s is not None
    assert latency_text(stored.get("ptr")).startswith("LLM wall time in the batch run: stubs ")
    assert latency_text(fresh.get("ptr")).endswith(" s live")
    assert stored.to_json()["ptr"]["rtp_overlap"] is not None and "rtp_overlap" not in fresh.to_json()["ptr"]


PLANS = {  # over the two hits below: one answered (a latency past 4 decimals), one refused, one an outage
    "answered": Plan(("Hotels: search hotels", "nowhere"), (("Hotels", "search hotels"),), ("search", "book"), None, 2,
                     "fake", "fake-llm-1", "fake-planner-v1", Usage(100, 20, 3), 0.123456789, cached=True),
    "refused": Plan((), (), (), "nothing fits", 2, "offline", "heuristic", "offline-planner-v1"),
    "failed": Plan((), (), (), None, 2, "gemini", "gemini-2.5-flash", "planner-v3", Usage(7, 0, 0), 30.0,
                   failure_reason(FailureKind.TIMEOUT, "no reply in 30 s"), failure=FailureKind.TIMEOUT),
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_plan_reads_back_from_its_json_whole(name: str) -> None:
    """What a plan's JSON leaves out comes back: k from the block's hits, the failure kind from the error's tag."""
    hits = (Hit("Hotels", "search hotels", "Travel", 0.9, 1), Hit("Jokes", "random joke", "Fun", 0.5, 2))
    block = ArchResult("rtp", hits, 0.9, 2).with_plan(PLANS[name])
    assert type(block.plan) is Plan and block.plan.latency_s == round(PLANS[name].latency_s, 4)
    outcome = QueryOutcome(2, (block,), "q")
    back = QueryOutcome.from_json(json.loads(json.dumps(outcome.to_json())))
    assert back == outcome and back.get("rtp").plan == block.plan
    assert Plan.from_json(block.plan.to_json(), block.plan.k) == block.plan
    assert back.get("rtp").total_tokens == block.plan.usage.total


def test_a_stored_plan_reads_back_from_its_json_whole(stored_url: str) -> None:
    query = make_queries()[6]
    stored = ResultsReader(stored_url).query_detail(query.subset, query.query_id, k=K)
    assert all(type(b.plan) is Plan for b in stored.blocks if arch(b.arch).plans)
    assert QueryOutcome.from_json(json.loads(json.dumps(stored.to_json()))) == stored


def test_gold_marks_follow_the_view(stored_url: str) -> None:
    query = make_queries()[6]
    stored = ResultsReader(stored_url).query_detail(query.subset, query.query_id, k=K)
    relevant = stored.with_gold(query.gold("relevant"))
    mine, theirs = relevant.get("ptr"), dict(stored.get("ptr").other_golds)["relevant"]
    assert (mine.gold.flags, mine.gold.recall, mine.gold.precision) == (theirs.flags, theirs.recall, theirs.precision)
    assert mine.gold.plan_pass is None  # the store's pass is under its own definition: not shown under another
    hits = relevant.to_json()["ptr"]["hits"]
    assert [h["gold"] for h in hits] == [h["gold_relevant"] for h in hits]
    assert all("gold" not in h for h in stored.with_gold(None).to_json()["rtp"]["hits"])
