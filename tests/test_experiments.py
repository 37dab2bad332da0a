"""The runner on tiny data: main, k sweep and scaling with injected retriever, agents and queries.

The fakes (queries over SMALL_APIS, a stub writer and a planner with fixed token usage) live in
tests/helpers.py, shared with test_resume and test_report.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select, update

from core.retrieval.archs import QUERY_LABEL, WrittenStubs, arch, discover
from core.retrieval.discovery import Retriever, Stub
from core.study.evaluate import score_query
from core.study.rows import FALLBACK_STUB, plan_pass
from core.study.setup import Setup
from core.agents.factory import agents_factory
from core.retrieval.memo import memoised
from core.study.hybrid import run_hybrid
from core.study.ksweep import run_ksweep
from core.study.main_study import run_main
from core.study.scaling import run_scaling, scaling_sizes, subset_gold_rows
from core.agents.factory import Agents
from core.agents.llm import Usage
from core.agents.planner import Plan
from core.settings import Settings
from core.store.schema import QueryResult, Run
from core.store.store import Store
from core.agents.stubs import StubOutcome
from core.data.toolbench import Query
from tests.helpers import (CV, H, FakePlanner, FakeStubWriter, bench_context, fake_agents, hybrid_of, make_queries,
                           make_retriever)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'results.sqlite'}"


def rows_of(store: Store, **where) -> list[QueryResult]:
    with store.session() as s:
        query = select(QueryResult).join(Run, Run.id == QueryResult.run_id)
        for name, value in where.items():
            query = query.where(getattr(Run, name) == value)
        return list(s.scalars(query))


def test_main_writes_every_run_and_query_with_provenance(db_url: str) -> None:
    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    factory = fake_agents()
    ids = run_main(bench_context(store, retriever, queries, commit="abc123"), runs=2, k=5, concurrency=4,
                   agents_for=factory)
    runs = store.runs(kind="main")
    assert len(ids) == len(runs) == 2 * 2 * 2  # subsets x runs x archs
    assert all(r.status == "complete" and r.n_queries == 6 for r in runs)
    assert all(store.count_results(r.id) == 6 for r in runs)
    spec = runs[0].spec
    assert (spec.llm_backend, spec.llm_model, spec.backend_label) == ("fake", "fake-llm-1", "fake fake-llm-1")
    assert (spec.discovery_prompt_version, spec.planner_prompt_version) == ("fake-stubs-v1", "fake-planner-v1")
    assert spec.registry_name == "small" and spec.registry_size == 10 and len(spec.registry_hash) == 16
    assert spec.embedding_model == "fake-bow-64" and runs[0].git_commit == "abc123"
    # the planner runs in every run for both architectures; stubs are written once per PtR query and run
    assert [factory.made[r].planner.calls for r in (0, 1)] == [24, 24]
    assert [factory.made[r].stub_writer.calls for r in (0, 1)] == [12, 12]


def test_rows_hold_scores_for_both_golds_hits_stubs_and_plans(db_url: str) -> None:
    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    run_main(bench_context(store, retriever, queries, commit="x"), runs=1, k=5, concurrency=1, agents_for=fake_agents())
    by_uid = {q.uid: q for q in queries}
    expected = dict(zip((q.uid for q in queries),
                        discover(arch("rtp"), [q.query for q in queries], None, [5], retriever)[5]))
    rtp_rows, ptr_rows = rows_of(store, arch="rtp"), rows_of(store, arch="ptr")
    assert sorted(r.query_uid for r in rtp_rows) == sorted(r.query_uid for r in ptr_rows) == sorted(by_uid)
    for row in rtp_rows:
        q = by_uid[row.query_uid]
        keys = expected[q.uid].keys
        assert row.recall_api_list == score_query(q, keys, "api_list", 5).recall
        assert row.precision_relevant == score_query(q, keys, "relevant", 5).precision
        assert [(h["tool_name"], h["api_name"]) for h in row.hits] == keys
        assert [h["gold"] for h in row.hits] == [k in q.gold("api_list") for k in keys]
        assert [h["gold_relevant"] for h in row.hits] == [k in q.gold("relevant") for k in keys]
        assert row.stubs is None and row.plan is not None and row.plan_prompt_tokens == 100
        assert (row.plan_steps, row.plan_apis_named) == (len(row.plan["steps"]), len(row.plan["selected_apis"]))
        assert row.plan_refusal == (row.plan["refusal"] is not None) and row.plan_fidelity == 1.0
        assert row.plan_pass_api_list == (row.plan["refusal"] is None
                                          and any(tuple(m) in q.gold("api_list") for m in row.plan_matched))
    for row in ptr_rows:
        q = by_uid[row.query_uid]
        stubs = FakeStubWriter().write(q.query).stubs
        found = arch("ptr").retrieve(q.query, WrittenStubs(stubs), 5, retriever)
        assert [(h["tool_name"], h["api_name"]) for h in row.hits] == found.keys
        assert row.search_width == found.search_width
        assert [s["name"] for s in row.stubs] == [s.name for s in stubs]
        top1 = row.stubs[0]["top1"]
        assert set(top1) == {"tool_name", "api_name", "score", "gold", "gold_relevant"}
        assert row.rtp_overlap == len(set(found.keys) & set(expected[q.uid].keys))
        assert row.same_as_rtp == (set(found.keys) == set(expected[q.uid].keys))
        assert (row.stub_prompt_tokens, row.stub_output_tokens, row.stub_thoughts_tokens) == (30, 12, 4)
        assert row.stub_fallback is False and row.error is None


def test_rtp_retrieval_is_identical_across_runs_and_ptr_stubs_are_per_run(db_url: str) -> None:
    store = Store(db_url)
    run_main(bench_context(store, memoised(make_retriever()), make_queries(), commit="x"), runs=2, concurrency=2,
             agents_for=fake_agents())
    rtp = {(r.run_id, r.query_uid): r.hits for r in rows_of(store, arch="rtp")}
    by_run: dict[int, dict[str, list]] = {}
    for (run_id, uid), hits in rtp.items():
        by_run.setdefault(run_id, {})[uid] = hits
    runs = [r for r in store.runs(kind="main") if r.spec.arch == "rtp" and r.spec.subset == "G2_instruction"]
    assert by_run[runs[0].id] == by_run[runs[1].id]
    ptr_runs = {r.spec.run_index: r.id for r in store.runs(kind="main")
                if r.spec.arch == "ptr" and r.spec.subset == "G2_instruction"}
    names = {i: {row["query_uid"]: [s["name"] for s in row["stubs"]] for row in store.results(run_id)}
             for i, run_id in ptr_runs.items()}
    assert all("get_random_joke" not in n for n in names[0].values())
    assert all("get_random_joke" in n for n in names[1].values())


def test_plan_pass_proxy_needs_a_gold_selection_and_no_refusal_or_parse_error() -> None:
    gold = {H}
    base = dict(steps=(), k=5, backend="f", model="m", prompt_version="v")
    assert plan_pass(Plan(("Hotels/search hotels",), (H,), refusal=None, **base), gold)
    assert not plan_pass(Plan(("Currency/convert",), (CV,), refusal=None, **base), gold)
    assert not plan_pass(Plan(("Hotels/search hotels",), (H,), refusal="no", **base), gold)
    assert not plan_pass(Plan((), (), refusal=None, parse_error="malformed_json: x", **base), gold)


def main_study(db_url: str):
    """A two-run main study over the fake agents: (store, retriever, queries, agents factory)."""
    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    factory = fake_agents()
    run_main(bench_context(store, retriever, queries, commit="x"), runs=2, concurrency=2, agents_for=factory)
    return store, retriever, queries, factory


def discovery_calls(factory) -> int:
    return sum(a.stub_writer.calls for a in factory.made.values())


def test_ksweep_reuses_stored_stubs_without_discovery_calls(db_url: str) -> None:
    store, retriever, queries, factory = main_study(db_url)
    calls_before = discovery_calls(factory)
    ids = run_ksweep(bench_context(store, retriever, queries, commit="x"), ks=(1, 5, 10))
    assert discovery_calls(factory) == calls_before
    sweep = store.runs(kind="ksweep")
    assert len(ids) == len(sweep) == 2 * (3 + 3 * 2)  # subsets x (RtP per k + PtR per k and main run)
    assert all(r.status == "complete" and store.count_results(r.id) == 6 for r in sweep)
    # k=5 of the sweep reproduces the main study exactly, run by run
    main = {(r.run_id, r.query_uid): r.recall_api_list for r in rows_of(store, kind="main")}
    sources = {r.id: r.spec.source_run_id for r in sweep}
    main_runs = {r.id: r for r in store.runs(kind="main")}
    for row in rows_of(store, kind="ksweep", k=5):
        source = main_runs[sources[row.run_id]]
        assert source.spec.subset == row.subset
        assert row.recall_api_list == main[(source.id, row.query_uid)]
    # hits are kept for run index 0 at the largest k only (smaller k are its prefix); stubs for run 0 at every k
    for run in sweep:
        rows = store.results(run.id, ("hits", "stubs"))
        assert all((r["hits"] is not None) == (run.spec.run_index == 0 and run.spec.k == 10) for r in rows)
        if run.spec.arch == "ptr":
            assert all((r["stubs"] is not None) == (run.spec.run_index == 0) for r in rows)
    widest = {(r.spec.arch, r.spec.subset): r.id for r in sweep if r.spec.k == 10 and r.spec.run_index == 0}
    for name in ("rtp", "ptr"):
        hits = {r["query_uid"]: r["hits"]
                for r in store.results(widest[(name, "G2_instruction")], ("query_uid", "hits"))}
        at5 = [r for r in rows_of(store, kind="main", arch=name, run_index=0) if r.subset == "G2_instruction"]
        assert all(hits[r.query_uid][:5] == r.hits for r in at5)  # the prefix of k=10 is exactly k=5


def test_ksweep_without_a_main_study_says_what_to_run(db_url: str) -> None:
    with pytest.raises(ValueError, match="bench main"):
        run_ksweep(bench_context(Store(db_url), make_retriever(), make_queries()), ks=(1,))


def test_scaling_keeps_gold_skips_sizes_too_small_and_runs_full_once(db_url: str) -> None:
    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    run_main(bench_context(store, retriever, queries, commit="x"), runs=1, concurrency=2, agents_for=fake_agents())
    by_subset = {s: [q for q in queries if q.subset == s] for s in ("G1_instruction", "G2_instruction")}
    assert [len(subset_gold_rows(retriever, qs)) for qs in by_subset.values()] == [8, 6]  # both definitions
    assert scaling_sizes((4, 9, 20, None), 10) == [4, 9, 10]
    run_scaling(bench_context(store, retriever, queries, commit="x"), sizes=(4, 7, None), seeds=3, k=5)
    runs = store.runs(kind="scaling")
    skipped = {(r.spec.subset, r.spec.sub_size) for r in runs if r.status == "skipped"}
    assert skipped == {("G1_instruction", 4), ("G1_instruction", 7), ("G2_instruction", 4)}
    assert all("do not fit" in r.note for r in runs if r.status == "skipped")
    full = [r for r in runs if r.spec.sub_size == 10]
    assert sorted(r.spec.sub_seed for r in full) == [0, 0, 0, 0]  # 2 subsets x 2 archs, one seed
    seven = [r for r in runs if r.spec.sub_size == 7 and r.spec.subset == "G2_instruction"]
    assert len(seven) == 2 * 3 and all(r.status == "complete" and store.count_results(r.id) == 6 for r in seven)
    for row in rows_of(store, kind="scaling", sub_size=7):
        assert row.hits is None
    ptr_rows = rows_of(store, kind="scaling", arch="ptr")
    assert ptr_rows and all(r.rtp_overlap is not None and r.same_as_rtp is not None for r in ptr_rows)


def test_scaling_sub_registry_holds_every_gold_api(db_url: str) -> None:
    from core.data.registry import stratified_rows

    retriever = make_retriever()
    queries = make_queries()
    gold = subset_gold_rows(retriever, [q for q in queries if q.subset == "G2_instruction"])
    for seed in range(4):
        rows = stratified_rows(retriever.registry, len(gold) + 1, gold, seed)
        assert set(gold) <= set(rows.tolist()) and len(rows) == len(gold) + 1


def test_resume_completes_unfinished_runs_and_redoes_error_rows(db_url: str) -> None:
    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    run_main(bench_context(store, retriever, queries, commit="x"), runs=1, concurrency=2, agents_for=fake_agents())
    victim = store.runs(kind="main")[1]
    with store.session.begin() as s:  # simulate a crash: a few rows missing, one failed, still "running"
        rows = list(s.scalars(select(QueryResult).where(QueryResult.run_id == victim.id)))
        for row in rows[:2]:
            s.delete(row)
        rows[2].error = "RuntimeError: transient"
        s.execute(update(Run).where(Run.id == victim.id).values(status="running", finished_at=None))
    factory = fake_agents()
    run_main(bench_context(store, retriever, queries, commit="x", resume=True), runs=1, concurrency=2,
             agents_for=factory)
    assert len(store.runs(kind="main")) == 4  # nothing new: the unfinished run was continued
    assert all(r.status == "complete" for r in store.runs(kind="main"))
    rows = store.results(victim.id, ("query_uid", "error"))
    assert len(rows) == 6 and len({r["query_uid"] for r in rows}) == 6 and all(r["error"] is None for r in rows)
    assert sum(a.planner.calls for a in factory.made.values()) == 3  # only the three missing queries


def test_a_failing_query_is_stored_as_an_error_row_not_a_crash(db_url: str) -> None:
    store = Store(db_url)

    class Boom(FakeStubWriter):
        def write(self, query: str) -> StubOutcome:
            if "Paris" in query:
                raise RuntimeError("boom")
            return super().write(query)

    factory = lambda r: Agents(Boom(r), FakePlanner())  # noqa: E731
    run_main(bench_context(store, memoised(make_retriever()), make_queries(), commit="x"), runs=1, concurrency=2,
             agents_for=factory)
    errors = [r for r in rows_of(store, arch="ptr") if r.error]
    assert len(errors) == 1 and "boom" in errors[0].error and errors[0].recall_api_list is None
    assert all(r.status == "complete" for r in store.runs())


def test_setup_records_the_retriever_and_agents() -> None:
    agents = fake_agents()(0)
    setup = Setup.of(make_retriever(), agents, commit="c0ffee")
    spec = setup.spec("main", "ptr", "G1_instruction", 5, 3)
    assert spec.run_index == 3 and setup.git_commit == "c0ffee"
    assert spec.backend_label == "fake fake-llm-1"


class CountingClient:
    backend = "openai"
    model = "fake-model"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, prompt: str, *, schema=None, temperature: float = 0.0):
        from core.agents.llm import LLMResponse

        self.calls += 1
        text = ('{"stubs": [{"name": "search_hotels", "reasoning": "hotels"}]}' if "stubs" in prompt
                else '{"selected_apis": [], "steps": [], "refusal": "none fit"}')
        return LLMResponse(text, Usage(10, 5, 0), 0.001, self.backend, self.model)


def test_llm_runs_after_the_first_get_their_own_cache_entries(tmp_path: Path, monkeypatch) -> None:
    client = CountingClient()
    monkeypatch.setattr("core.agents.factory.make_client", lambda settings: client)
    settings = Settings.from_env(env={"LLM_BACKEND": "openai", "OPENAI_BASE_URL": "http://127.0.0.1:9",
                                      "LLM_MODEL": "fake-model", "CACHE_DIR": str(tmp_path / "cache")})
    build = agents_factory(settings, make_retriever(), use_cache=True)
    query = "Find hotels in Paris"
    first = build(0).stub_writer.write(query)
    assert client.calls == 1 and not first.cached
    assert build(0).stub_writer.write(query).cached and client.calls == 1  # run 0 replays from the cache
    assert not build(1).stub_writer.write(query).cached and client.calls == 2  # run 1: its own answer
    assert build(1).stub_writer.write(query).cached and client.calls == 2  # ... replayed on a resume
    assert build(1).stub_writer.prompt_version == build(0).stub_writer.prompt_version  # provenance unchanged


class FailingStubWriter(FakeStubWriter):
    """Every write fails: PtR falls back to the raw query as its only stub."""

    def write(self, query: str) -> StubOutcome:
        return StubOutcome((Stub(query),), self.backend, self.model, self.prompt_version, fallback=True,
                           error="malformed_json: no JSON object in reply")


def main_study_with_fallback_stubs(db_url: str) -> tuple[Store, Retriever, list[Query]]:
    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    run_main(bench_context(store, retriever, queries, commit="x"), runs=1, concurrency=2,
             agents_for=lambda r: Agents(FailingStubWriter(r), FakePlanner()))
    return store, retriever, queries


def test_a_fallback_stub_is_stored_without_the_query_text_and_rebuilt_for_reuse(db_url: str) -> None:
    store, retriever, queries = main_study_with_fallback_stubs(db_url)
    run_ksweep(bench_context(store, retriever, queries, commit="x"), ks=(5, 10))
    by_uid = {q.uid: q for q in queries}
    for row in rows_of(store, arch="ptr"):
        assert row.query_uid and by_uid[row.query_uid].query not in json.dumps([row.stubs, row.hits])
    main = {r.query_uid: r for r in rows_of(store, kind="main", arch="ptr")}
    assert all(r.stub_fallback and r.stubs[0]["name"] == FALLBACK_STUB for r in main.values())
    # the k sweep searched with the raw query again: its k=5 equals the main run exactly
    for row in rows_of(store, kind="ksweep", arch="ptr", k=5):
        assert row.recall_api_list == main[row.query_uid].recall_api_list and row.stub_fallback


def test_hybrid_reuses_stored_stubs_adds_the_query_and_resumes(db_url: str) -> None:
    store, retriever, queries, factory = main_study(db_url)
    calls_before = discovery_calls(factory)
    ids = run_hybrid(bench_context(store, retriever, queries, commit="x"))
    assert discovery_calls(factory) == calls_before  # no discovery calls
    runs = store.runs(kind="hybrid")
    assert len(ids) == len(runs) == 2 * 2 and all(r.spec.arch == "hybrid" and r.spec.k == 5 for r in runs)
    assert all(r.status == "complete" and store.count_results(r.id) == 6 for r in runs)
    # finished runs are skipped
    assert run_hybrid(bench_context(store, retriever, queries, commit="x", resume=True)) == []
    by_uid = {q.uid: q for q in queries}
    first = [r for r in runs if r.spec.run_index == 0]
    assert len(first) == 2  # one per subset
    for run in first:  # hits are kept for run index 0
        source = {row["query_uid"]: row["stubs"]
                  for row in store.results(run.spec.source_run_id, ("query_uid", "stubs"))}
        rows = store.results(run.id, ("query_uid", "hits"))
        assert len(rows) == 6 and all(row["hits"] for row in rows)
        for row in rows:
            written = [Stub(s["name"], s["reasoning"]) for s in source[row["query_uid"]]]
            expected = hybrid_of(by_uid[row["query_uid"]].query, written, 5, retriever)
            assert [(h["tool_name"], h["api_name"]) for h in row["hits"]] == expected.keys
            assert {h["stub"] for h in row["hits"]} <= {QUERY_LABEL, *(s.name for s in written)}


def test_hybrid_of_fallback_stubs_is_the_query_alone_and_stores_no_query_text(db_url: str) -> None:
    store, retriever, queries = main_study_with_fallback_stubs(db_url)
    run_hybrid(bench_context(store, retriever, queries, commit="x"))
    rtp = {r.query_uid: r for r in rows_of(store, kind="main", arch="rtp")}
    for row in rows_of(store, kind="hybrid"):
        assert row.recall_api_list == rtp[row.query_uid].recall_api_list and row.same_as_rtp
        assert {h["stub"] for h in row.hits} == {QUERY_LABEL}
        assert [q for q in queries if q.uid == row.query_uid][0].query not in json.dumps(row.hits)
