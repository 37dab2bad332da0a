"""The model-size answer: the copy rate of prompt text into replies, systems that are one backend's several models,
and the table that puts PtR - RtP and hybrid - RtP per discovery model beside the paper's."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from core.agents.prompts import COMPLETION_REFUSAL, STYLES, style_of_version
from core.agents.stubs import OFFLINE_VERSION, Stub, StubOutcome
from core.agents.llm.base import Usage
from core.analysis.copying import copy_rate, plan_reply_copy, stub_reply_copy
from core.analysis.model_size import COLUMNS, model_size_table, paired_difference, paper_rows
from core.analysis.paper import load_paper
from core.analysis.reader import ResultsReader
from core.study.main_study import run_main
from core.study.catalog import BenchContext
from core.study.hybrid import run_hybrid
from core.evaluation.stats import bootstrap_ci
from core.agents.factory import Agents
from tests.helpers import FakePlanner, FakeStubWriter, bench_context, make_queries, run_study

ZIP = "Find a 7-letter word, then get income data for ZIP code 98765."


def test_a_plan_step_from_the_examples_is_a_copy_unless_the_query_says_it_too() -> None:
    step = {"steps": ["Find vegetarian lasagna recipes"], "refusal": None}
    assert plan_reply_copy(step, ZIP, "completion") == "find vegetarian lasagna recipes"
    assert plan_reply_copy(step, "Find vegetarian lasagna recipes for Sunday", "completion") is None
    assert plan_reply_copy({"steps": ["get income data for ZIP code 98765"], "refusal": None}, ZIP,
                           "completion") is None


def test_the_declared_refusal_marker_is_no_copy_but_a_free_refusal_from_the_prompt_is() -> None:
    assert plan_reply_copy({"steps": [], "refusal": COMPLETION_REFUSAL}, ZIP, "completion") is None
    copied = {"steps": [], "refusal": "none of the listed APIs can serve the request"}
    assert plan_reply_copy(copied, ZIP, "chat") is not None


def test_an_example_stub_name_with_no_word_in_the_query_is_a_copy() -> None:
    assert stub_reply_copy(["search_hotels"], ["hotels near the old town"], ZIP, "completion") == "search_hotels"
    assert stub_reply_copy(["search_hotels"], ["hotels"], "Find hotels in Rome", "completion") is None
    instruction = "one short sentence on which part of the request it serves"
    assert stub_reply_copy(["get_income_by_zip"], [instruction], ZIP, "chat") is not None
    assert stub_reply_copy(["get_income_by_zip"], ["Income data for a ZIP code."], ZIP, "chat") is None


def test_copy_rate_counts_replies_and_names_the_most_frequent_phrases() -> None:
    rate = copy_rate(["a b c d", None, "a b c d", "e f g h", None])
    assert (rate.replies, rate.copying, rate.rate) == (5, 3, 0.6)
    assert rate.examples == ("a b c d", "e f g h")
    assert copy_rate([]).rate is None


def test_a_stored_version_names_its_style() -> None:
    for name, style in STYLES.items():
        assert style_of_version(style.discovery_version) == name
        assert style_of_version(style.planner_version) == name
    assert style_of_version("fewshot-g1-c8a2eb9084fd") == "completion"  # an older version of a style is that style
    assert style_of_version(OFFLINE_VERSION) is None and style_of_version("") is None


def test_paired_difference_is_the_mean_difference_with_its_bootstrap_interval() -> None:
    a, b = pd.Series([1.0, 0.5, None, 0.0]), pd.Series([0.0, 0.5, 1.0, 0.5])
    mean, low, high = paired_difference(a, b)
    assert mean == pytest.approx((1.0 + 0.0 - 0.5) / 3)
    assert (low, high) == bootstrap_ci([1.0, 0.0, -0.5])
    assert all(math.isnan(v) for v in paired_difference(pd.Series([None]), pd.Series([1.0])))


def test_the_papers_rows_read_all_three_shapes_of_its_figures() -> None:
    rows = {(r["model"], r["subset"]): r for r in paper_rows(load_paper())}
    gemini_g2 = rows[("Gemini 2.5 Flash (paper)", "G2_instruction")]
    assert gemini_g2["ptr_minus_rtp"] == pytest.approx(0.188 - 0.143) and gemini_g2["stubs_per_query"] == 2.45
    assert rows[("gpt-oss-120b (paper)", "G1_instruction")]["ptr_minus_rtp"] == pytest.approx(-0.113)
    assert rows[("gpt-oss-120b (paper)", "G2_instruction")]["ptr_minus_rtp"] == pytest.approx(0.051)
    assert rows[("gpt-oss-120b (paper)", "G3_instruction")]["ptr_minus_rtp"] == pytest.approx(0.146 - 0.16)
    assert math.isnan(gemini_g2["ptr_low"])  # the paper gives no interval


class CopyingStubWriter(FakeStubWriter):
    """A second model of the fake backend, in the chat style, whose every other reply copies the prompt."""

    model = "fake-llm-2"
    prompt_version = STYLES["chat"].discovery_version

    def write(self, query: str) -> StubOutcome:
        self.calls += 1
        reasoning = ("one short sentence on which part of the request it serves" if self.calls % 2
                     else "what the user asked")
        return StubOutcome((Stub("do_" + "_".join(query.lower().split()[:2]), reasoning),), self.backend, self.model,
                           self.prompt_version, Usage(30, 12, 0), 0.01)


class SecondPlanner(FakePlanner):
    model = "fake-llm-2"
    prompt_version = STYLES["chat"].planner_version


def test_two_models_of_one_backend_are_two_systems_in_the_model_size_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'models.sqlite'}"
    store, retriever, queries = run_study(url, runs=1, ks=(5,), sizes=(None,), seeds=1)
    context = bench_context(store, retriever, queries, commit="abc123")
    run_hybrid(context)
    run_main(context, runs=1, k=5, agents_for=lambda r: Agents(CopyingStubWriter(r), SecondPlanner()))
    store.close()
    reader = ResultsReader(url)
    assert reader.backends() == ["fake:fake-llm-1", "fake:fake-llm-2"]
    assert reader.setup("fake:fake-llm-1")["llm_model"] == "fake-llm-1"
    assert reader.setup("fake")["llm_model"] == "fake-llm-2"  # a bare backend: its latest model
    texts = {(q.subset, q.query_id): q.query for q in make_queries()}
    table = model_size_table(reader, load_paper(), texts)
    assert list(table.columns) == COLUMNS
    ours = table[table["source"] == "this lab"]
    assert ours["model"].tolist() == ["fake fake-llm-1"] * 2 + ["fake fake-llm-2"] * 2
    first = ours.iloc[0]
    pq = reader.per_query(None, "api_list", 5, "fake:fake-llm-1")
    g1 = pq[pq["subset"] == "G1_instruction"]
    assert first["ptr_minus_rtp"] == pytest.approx((g1["ptr_recall"] - g1["rtp_recall"]).mean())
    assert first["ptr_low"] <= first["ptr_minus_rtp"] <= first["ptr_high"]
    assert not math.isnan(first["hybrid_minus_rtp"])  # the first model's hybrid; the second has none
    assert math.isnan(ours.iloc[2]["hybrid_minus_rtp"])
    assert pd.isna(first["stub_copy_rate"])  # its prompt version is no style of ours: nothing to copy from
    second = ours[ours["model"] == "fake fake-llm-2"]
    assert all(0 < r < 1 for r in second["stub_copy_rate"])
    assert set(table[table["source"] == "paper"]["model"]) == {"Gemini 2.5 Flash (paper)", "gpt-oss-120b (paper)"}


def test_the_hybrid_builds_on_the_configured_models_main_study_not_the_latest_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two models of one backend stored, the second later: a hybrid run for the first model searches the first
    model's stubs (and says so), not the second's, although those are the latest main study of the backend."""
    store, retriever, queries = run_study(f"sqlite:///{tmp_path / 'two.sqlite'}", runs=1, ks=(5,), sizes=(None,),
                                          seeds=1)
    context = bench_context(store, retriever, queries, commit="abc123")
    run_main(context, runs=1, k=5, agents_for=lambda r: Agents(CopyingStubWriter(r), SecondPlanner()))
    monkeypatch.setattr(BenchContext, "main_backend", property(lambda self: ("fake", "fake-llm-1")))
    run_hybrid(context)
    hybrid = store.runs(kind="hybrid")
    assert hybrid and {r.spec.llm_model for r in hybrid} == {"fake-llm-1"}
    store.close()
