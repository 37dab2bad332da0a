"""The lab's vocabulary, declared once: architectures (core.retrieval.archs) and gold definitions (core.data.toolbench).
Another architecture is one declaration plus its retrieval, which the single query and `eval` then run."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.agents.factory import Agents
from core.analysis.reader import ResultsReader
from core.analysis.report import build_report, render_text
from core.data.toolbench import DEFAULT_GOLD, GOLD_DEFINITIONS, gold_definition
from core.retrieval import archs
from core.retrieval.archs import ARCH_LIST, ARCHS, PAPER_ARCHS, arch
from core.settings import Settings
from core.study.evaluate import evaluate_subset
from core.study.gold_trace import trace_gold, verdict
from core.study.ksweep import run_ksweep
from core.study.one_query import run_query
from core.store.store import Store
from tests.helpers import (SMALL_APIS, WIDE, FakePlanner, FakeStubWriter, bench_context, make_queries, make_retriever,
                           run_study, write_compact_data)

QUERY = "Find hotels in London and check the currency exchange rate"

def test_the_declarations_name_the_stored_values_and_their_retrieval() -> None:
    assert ARCHS == ("rtp", "ptr", "hybrid") and PAPER_ARCHS == ("rtp", "ptr")
    assert [a.label for a in ARCH_LIST] == ["RtP", "PtR", "hybrid"] and arch("hybrid").legend == "Hybrid"
    assert arch("hybrid").table_label == "hybrid (beyond the paper)" and arch("ptr").table_label == "PtR"
    assert [a.name for a in ARCH_LIST if a.carries_stubs] == ["ptr"]
    assert [a.name for a in ARCH_LIST if a.baseline] == ["rtp"] and archs.baseline() is arch("rtp")
    assert [a.name for a in archs.planning()] == ["rtp", "ptr"] and archs.stub_carrier() is arch("ptr")
    assert [a.name for a in ARCH_LIST if a.in_ksweep] == ["rtp", "ptr"]
    for declared in ARCH_LIST:  # the retrieval is code the declaration names, not a string
        assert callable(declared.searches) and callable(declared.depth)
    with pytest.raises(ValueError, match="arch must be one of rtp, ptr, hybrid, not 'rag'"):
        arch("rag")


def test_gold_definitions_read_the_query_and_name_its_columns() -> None:
    query = make_queries(1)[0]
    assert GOLD_DEFINITIONS == ("api_list", "relevant") and DEFAULT_GOLD.name == "api_list"
    relevant = gold_definition("relevant")
    assert relevant.of(query) == frozenset(query.relevant_apis) == query.gold("relevant")
    assert DEFAULT_GOLD.of(query) == frozenset(query.api_list)
    assert relevant.column("recall") == "recall_relevant" and DEFAULT_GOLD.column("plan_pass") == "plan_pass_api_list"
    assert (DEFAULT_GOLD.hit_flag, relevant.hit_flag) == ("gold", "gold_relevant")
    with pytest.raises(ValueError, match="gold definition must be one of api_list, relevant, not 'all'"):
        query.gold("all")


def _settings(tmp_path: Path) -> Settings:
    data = write_compact_data(tmp_path / "data", SMALL_APIS, [
        {"subset": q.subset, "group": q.group, "query_id": q.query_id, "query": q.query,
         "relevant_apis": [list(k) for k in q.relevant_apis], "api_list": [list(k) for k in q.api_list]}
        for q in make_queries()])
    return Settings.from_env(env={"CACHE_DIR": str(tmp_path / "cache"), "TOOLBENCH_DATA": str(data)})


def test_a_new_architecture_is_one_declaration(monkeypatch, tmp_path: Path) -> None:
    """Declared with no other edit, it answers the single query, `eval`, the gold trace, the k sweep and the
    report."""
    monkeypatch.setitem(archs.ARCHS_BY_NAME, WIDE.name, WIDE)
    retriever = make_retriever()
    settings = _settings(tmp_path)
    result = run_query(QUERY, 3, retriever, settings, agents=Agents(FakeStubWriter(), FakePlanner()))
    assert [b.arch for b in result.blocks] == ["rtp", "ptr", "hybrid", "rtp@2k"]
    wide, rtp = result.get("rtp@2k"), result.get("rtp")
    assert wide.keys == rtp.keys  # an exact index: the top k of 2k is the top k
    assert (wide.search_width, rtp.search_width) == (6, 3) and wide.plan is None and "rtp@2k" in result.to_json()
    alone = run_query(QUERY, 3, retriever, settings, archs=(WIDE,), plans=False)
    assert [b.arch for b in alone.blocks] == ["rtp@2k"] and alone.llm_error is None

    rows = {name: evaluate_subset(settings, retriever, name, "G2_instruction", "api_list", [1, 3])
            for name in ("rtp", "rtp@2k")}
    assert [r["arch"] for r in rows["rtp@2k"]] == ["rtp@2k", "rtp@2k"]
    assert [{**r, "arch": "rtp", "mean_search_width": 0} for r in rows["rtp@2k"]] == [
        {**r, "mean_search_width": 0} for r in rows["rtp"]]
    assert [r["mean_search_width"] for r in rows["rtp@2k"]] == [2, 6]

    query = make_queries()[0]
    traces = trace_gold(query.query, None, query.gold("api_list"), retriever)
    assert traces and all(t.archs == ("rtp", "rtp@2k") and t.rank("rtp@2k") == t.rank("rtp") for t in traces)
    found = [t for t in traces if (t.rank("rtp") or 99) <= 3]
    assert found and all("RtP@2k" in verdict(t, 3) for t in found)


def test_a_new_architecture_joins_the_k_sweep_and_the_report(monkeypatch, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    run_study(url, runs=1)[0].close()  # main, k sweep and scaling with the declared three
    monkeypatch.setitem(archs.ARCHS_BY_NAME, WIDE.name, WIDE)
    store = Store(url)
    try:
        written = run_ksweep(bench_context(store, make_retriever(), make_queries(), commit="abc123", resume=True),
                             ks=(1, 3, 5))
        wide_runs = [r for r in store.runs(kind="ksweep") if r.spec.arch == "rtp@2k"]
        subsets = {q.subset for q in make_queries()}
        assert sorted(r.id for r in wide_runs) == sorted(written) and len(wide_runs) == len(subsets) * 3  # x 3 k
        assert all(r.status == "complete" for r in wide_runs)
    finally:
        store.close()
    report = build_report(ResultsReader(url), "api_list")
    sweep = report["sections"]["ksweep"]["ours"]
    by_arch = {(r["subset"], r["arch"], r["k"]): r["recall_mean"] for r in sweep}
    assert {key for key in by_arch if key[1] == "rtp@2k"} == {(s, "rtp@2k", k) for s, _, k in by_arch if _ == "rtp"}
    assert all(by_arch[(s, "rtp@2k", k)] == by_arch[(s, "rtp", k)] for s, a, k in by_arch if a == "rtp@2k")
    assert "rtp@2k" in render_text(report)
