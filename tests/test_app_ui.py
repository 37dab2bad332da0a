"""The dashboard's pure helpers: escaping, URL views, tables, paper points, PCA and figure builders."""
from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from core.settings import PROJECT_ROOT
from core.agents.llm import Usage
from core.agents.planner import Plan
from core.analysis import paper
from core.study.query_result import QueryOutcome
from ui import figures, tables
from ui.projection import fit_pca, sample_rows
from ui.safe import md, one_line, plot_text
from core.embedding_models import retriever_names
from ui.inspector_view import View, latency_text, parse_qid, parse_view

PAPER = paper.load_paper(PROJECT_ROOT / "data" / "paper_reference.json")
H, FX, JK = ("Hotels", "search hotels"), ("Currency", "exchange rate"), ("Jokes", "random joke")


# ---------------------------------------------------------------- ui.safe

@pytest.mark.parametrize("evil", [
    "![x](http://evil.example/x.png)", "<script>alert(1)</script>", "[click](javascript:alert(1))",
    "# heading", ":red[red] :material/home:", "$x^2$", "**bold** _it_ `code`", "<img src=x onerror=alert(1)>",
])
def test_md_escapes_every_markdown_construct(evil: str) -> None:
    out = md(evil)
    # Every markdown-significant character is backslash-escaped, so none can start a construct.
    assert not re.search(r"(?<!\\)[!\[\]()<>*_`#:$]", out)
    assert out.replace("\\", "").replace("\u2060", "") == evil.replace("\\", "")


@pytest.mark.parametrize("text", ["Picnie/https://picnic.com/api/v1/add", "see www.evil.com", "mail ops@evil.com",
                                  "FTP://files.example.org", "mailto:someone@example.org"])
def test_md_keeps_urls_and_addresses_from_becoming_links(text: str) -> None:
    out = md(text)
    unescaped = out.replace("\\", "")
    # GFM links a scheme followed by ":", "www." and user@host; a word joiner now sits inside each
    assert not re.search(r"(?i)(https?|ftp|mailto):|www\.|\w@\w", unescaped)
    assert unescaped.replace("\u2060", "") == text  # and the text reads the same


def test_md_collapses_newlines_and_clips() -> None:
    assert md("a\n\n# b") == "a \\# b"
    assert one_line("x" * 50, 10) == "x" * 9 + "…"
    assert md(None) == ""


def test_plot_text_html_escapes_for_plotly() -> None:
    assert plot_text('<a href="javascript:x">hi</a>') == "&lt;a href=&quot;javascript:x&quot;&gt;hi&lt;/a&gt;"


# ---------------------------------------------------------------- ui.inspector_view

def test_view_round_trips_through_url_params() -> None:
    view = View("", ("G1_instruction", 577), 7, "offline")
    assert view.params() == {"qid": "G1_instruction:577", "k": "7", "backend": "offline"}
    parsed, messages = parse_view(view.params(), 5, ["offline"])
    assert parsed == view and messages == []
    text_view = View("find hotels", None, 3, None)
    assert parse_view(text_view.params(), 5, ["offline"])[0] == text_view
    names = retriever_names("all-MiniLM-L6-v2")
    assert names[0] == "all-MiniLM-L6-v2" and names[-1] == "bm25" and len(set(names)) == len(names) == 4
    other = View("find hotels", None, 3, None, "bm25")
    assert other.params()["retriever"] == "bm25" and parse_view(other.params(), 5, ["offline"], names) == (other, [])
    own, messages = parse_view({"q": "x", "retriever": names[0]}, 5, ["offline"], names)
    assert own.retriever is None and messages == []  # the studies' own is the default: never in the link
    unknown, messages = parse_view({"q": "x", "retriever": "gte-base"}, 5, ["offline"], names)
    assert unknown.retriever is None and len(messages) == 1 and "gte-base" in messages[0]


@pytest.mark.parametrize("params, expected_k, n_messages", [
    ({"k": "0"}, 5, 1), ({"k": "21"}, 5, 1), ({"k": "abc"}, 5, 1), ({"k": "12"}, 12, 0),
    ({"qid": "nonsense"}, 5, 1), ({"backend": "gemini"}, 5, 1), ({}, 5, 0),
])
def test_parse_view_turns_bad_params_into_messages(params: dict, expected_k: int, n_messages: int) -> None:
    view, messages = parse_view(params, 5, ["offline"])
    assert view.k == expected_k and len(messages) == n_messages
    assert view.backend is None


def test_parse_qid() -> None:
    assert parse_qid("G1_instruction:577") == ("G1_instruction", 577)
    assert parse_qid(" weird:subset:3 ") == ("weird:subset", 3)
    assert parse_qid("G1:") is None and parse_qid(":3") is None and parse_qid("577") is None


def _result() -> QueryOutcome:
    hits = [{"rank": 1, "tool_name": "Hotels", "api_name": "search hotels", "category": "Travel", "score": 0.9,
             "stub": "find_hotels", "gold": False},
            {"rank": 2, "tool_name": "Jokes", "api_name": "random joke", "category": "Fun", "score": 0.5,
             "stub": "tell_joke", "gold": False}]
    plan = Plan((), (), (), None, 2, "fake", "fake-llm-1", "fake-planner-v1", Usage(30), 0.5).to_json()
    head = {"top1_score": 0.9, "search_width": 2, "recall": 0.0, "precision": 0.0, "plan": plan}
    return QueryOutcome.from_json({
        "query": "q", "k": 2, "rtp": {"hits": hits, **head, "latency_s": 0.01},
        "ptr": {"hits": hits, **head, "latency_s": 0.02, "stub_fallback": False, "stub_latency_s": 1.0,
                "stubs": [{"name": "find_hotels", "reasoning": "r"}, {"name": "unused", "reasoning": ""}],
                "usage": {"prompt_tokens": 10, "output_tokens": 2}}})


def test_with_gold_recomputes_marks_and_metrics_without_mutating() -> None:
    original = _result()
    out = original.with_gold({H, FX})
    assert [flag for _, flag in out.get("rtp").marked_hits()] == [True, False]
    assert (out.get("rtp").gold.recall, out.get("rtp").gold.precision) == (0.5, 0.5)
    assert original.get("rtp").gold.flags == (False, False)  # the input is untouched
    cleared = out.with_gold(None).to_json()["ptr"]
    assert "recall" not in cleared and all("gold" not in h for h in cleared["hits"])


def test_stub_hits_tokens_and_latency() -> None:
    block = _result().get("ptr")
    groups = block.stub_hits()
    assert [(s.name, [h.rank for h in found]) for s, found in groups] == [("find_hotels", [1]), ("unused", [])]
    assert block.total_tokens == 42 and replace(block, plan=None, writing=None).total_tokens == 0
    assert block.total_latency_s == pytest.approx(1.52)
    assert latency_text(block) == "1.52 s live"
    stored = replace(block, latency_s=None)  # what the store gives: the LLM calls' times, no retrieval time
    assert latency_text(stored) == "LLM wall time in the batch run: stubs 1.00 s + plan 0.50 s"
    assert latency_text(replace(stored, plan=None, writing=None)) == "no LLM time stored at this k"


def test_exports_carry_their_provenance() -> None:
    from core.analysis.provenance import provenance, provenance_line

    setup = {"backend_label": "offline heuristic, not an LLM", "llm_backend": "offline", "llm_model": "heuristic-v1",
             "embedding_model": "all-MiniLM-L6-v2", "registry_name": "full", "registry_size": 47038, "k": 5,
             "runs": 1, "git_commit": "0123456789abcdef"}
    fields = provenance(setup, "relevant")
    assert fields == {"backend_label": "offline heuristic, not an LLM", "llm_backend": "offline",
                      "llm_model": "heuristic-v1", "embedding_model": "all-MiniLM-L6-v2",
                      "registry": "full (47,038 APIs)", "gold": "relevant", "k": 5, "runs": 1,
                      "plans": "all queries", "commit": "0123456789"}
    assert provenance_line(fields) == ("offline heuristic, not an LLM · all-MiniLM-L6-v2 · full (47,038 APIs) · "
                                       "gold relevant · k 5 · commit 0123456789")
    sampled = provenance({**setup, "planner_sample": {"per_subset": 60, "seed": 0}}, "relevant")
    assert sampled["plans"] == "sample of 60 per subset (stratified, seed 0)"
    assert provenance_line(sampled).endswith("commit 0123456789 · plans: sample of 60 per subset (stratified, seed 0)")
    table = pd.DataFrame({"subset": ["G1_instruction"], "k": [10], "recall": [0.5]})
    exported = tables.with_provenance(table, fields)
    assert exported["k"].tolist() == [10]  # the row's own k wins
    assert exported["backend_label"].tolist() == ["offline heuristic, not an LLM"] and "gold" in exported
    blob = json.loads(tables.export_json(table, fields))
    assert blob["provenance"] == fields and blob["rows"] == [{"subset": "G1_instruction", "k": 10, "recall": 0.5}]


def test_paired_display_and_whether_runs_can_vary() -> None:
    paired = pd.DataFrame([{"subset": "G1_instruction", "metric": "recall", "n": 200, "rtp_mean": 0.4, "rtp_low": 0.35,
                            "rtp_high": 0.45, "ptr_mean": 0.3, "ptr_low": 0.25, "ptr_high": 0.36, "mean_diff": -0.1,
                            "diff_low": -0.15, "diff_high": -0.05, "wilcoxon_p": 0.0001, "paired_t_p": 0.02,
                            "better": "rtp"}])
    row = tables.paired_display(paired).iloc[0]
    assert (row["RtP"], row["PtR − RtP"], row["Wilcoxon p"], row["paired t p"]) == (
        "0.400 [0.350, 0.450]", "-0.100 [-0.150, -0.050]", "<0.001", "0.020")
    main = _main_table()
    assert not tables.runs_can_vary(main, 1)
    assert not tables.runs_can_vary(main.assign(rtp_std=0.0, ptr_std=0.0), 4)
    assert tables.runs_can_vary(main.assign(rtp_std=0.0, ptr_std=0.01), 4)
    means = tables.run_level_display(main)
    assert "p-value" not in means and "±" not in "".join(means["RtP"])


# ---------------------------------------------------------------- ui.paper

def test_paper_points_use_our_subset_names() -> None:
    main = paper.main_points(PAPER)
    g1 = main[(main["subset"] == "G1_instruction") & (main["metric"] == "recall")].set_index("arch")
    assert g1.loc["rtp", "mean"] == 0.372 and np.isnan(g1.loc["rtp", "std"])
    assert g1.loc["ptr", "mean"] == 0.289 and g1.loc["ptr", "std"] == 0.010
    k = paper.ksweep_points(PAPER)
    assert set(k["subset"]) <= {"G1_instruction", "G2_instruction", "G3_instruction"}
    assert ((k["subset"] == "G2_instruction") & (k["arch"] == "rtp") & (k["k"] == 10)).any()
    assert paper.wins_table(PAPER).set_index("subset").loc["G2_instruction", "ptr_wins"] == 69
    assert len(paper.scaling_divergence_points(PAPER)) == 2 and len(paper.stub_cosine_points(PAPER)) == 2


def test_missing_paper_file_gives_empty_frames(tmp_path) -> None:
    empty = paper.load_paper(tmp_path / "nope.json")
    assert empty == {} and paper.main_points(empty).empty and paper.ksweep_points(empty).empty
    (tmp_path / "bad.json").write_text("{not json")
    assert paper.load_paper(tmp_path / "bad.json") == {}


# ---------------------------------------------------------------- ui.tables

def _main_table() -> pd.DataFrame:
    return pd.DataFrame({
        "subset": ["G2_instruction", "G1_instruction", "G1_instruction"], "metric": ["recall", "recall", "precision"],
        "rtp_mean": [0.14, 0.37, 0.27], "rtp_std": [0.0, 0.0, np.nan], "ptr_mean": [0.19, 0.29, 0.27],
        "ptr_std": [0.01, 0.01, 0.0], "p_value": [0.0004, 0.02, np.nan],
        "test": ["paired t", "paired t", "no variance"],
        "better": ["ptr", "rtp", "tie"], "n_queries": [200, 200, 200], "runs": [4, 4, 4]})


def test_main_table_display_orders_formats_and_bolds_the_better_side() -> None:
    display = tables.main_table_display(_main_table())
    assert display["subset"].tolist() == ["G1_instruction", "G1_instruction", "G2_instruction"]
    assert display["metric"].tolist() == ["recall", "precision", "recall"]  # recall first, as the paper
    assert display.loc[2, "PtR"] == "0.190 ± 0.010" and display.loc[2, "p-value"] == "<0.001"
    assert display.loc[1, "p-value"] == "–" and display.loc[1, "RtP"] == "0.270"
    style = tables.main_table_styler(_main_table()).to_html().split("</style>")[0]
    # G1 recall's RtP cell (row 0, col 2) and G2 recall's PtR cell (row 2, col 3); the tie has none.
    assert sorted(re.findall(r"_(row\d+_col\d+)", style)) == ["row0_col2", "row2_col3"]
    assert tables.main_table_display(_main_table().iloc[0:0]).empty


def test_fmt_p() -> None:
    assert tables.fmt_p(0.0123) == "0.012" and tables.fmt_p("n.s.") == "n.s." and tables.fmt_p(None) == "–"


def _per_query() -> pd.DataFrame:
    return pd.DataFrame({"subset": ["G1_instruction", "G1_instruction", "G2_instruction"], "query_id": [1, 2, 3],
                         "rtp_recall": [1.0, 0.0, 0.5], "ptr_recall": [0.0, 0.0, 1.0], "recall_diff": [-1.0, 0.0, 0.5],
                         "outcome": ["rtp_wins", "both_miss", "ptr_wins"], "stub_names": ["get_weather", "", "a, b"]})


def test_filter_examples_and_links() -> None:
    df = tables.join_queries(_per_query(), {("G1_instruction", 1): "Weather in Paris", ("G2_instruction", 3): "Hotels"})
    assert df["query"].tolist() == ["Weather in Paris", "", "Hotels"]
    assert len(tables.filter_examples(df)) == 3
    assert tables.filter_examples(df, outcomes=["ptr_wins"])["query_id"].tolist() == [3]
    assert tables.filter_examples(df, subsets=["G1_instruction"], diff_range=(-1.0, -0.5))["query_id"].tolist() == [1]
    assert tables.filter_examples(df, text="WEATHER")["query_id"].tolist() == [1]  # query text or stub names
    assert tables.inspector_links(df, 5)[0] == "inspector?qid=G1_instruction:1&k=5"


def test_search_registry_is_a_case_insensitive_substring_match() -> None:
    frame = pd.DataFrame({"tool": ["Hotels", "Jokes"], "api": ["search", "random"],
                          "description": ["", "A (funny) joke"]})
    frame["_haystack"] = (frame["tool"] + "\n" + frame["api"] + "\n" + frame["description"]).str.lower()
    assert tables.search_registry(frame, "(FUNNY")["tool"].tolist() == ["Jokes"]
    assert len(tables.search_registry(frame, "  ")) == 2 and "_haystack" not in tables.search_registry(frame, "")


# ---------------------------------------------------------------- ui.projection

def test_pca_finds_the_main_axes_and_projects_new_points() -> None:
    rng = np.random.default_rng(1)
    data = np.zeros((200, 5))
    data[:, 2] = rng.normal(0, 10, 200)
    data[:, 4] = rng.normal(0, 3, 200)
    data += rng.normal(0, 0.01, data.shape)
    proj = fit_pca(data)
    assert abs(proj.components[0, 2]) > 0.99 and abs(proj.components[1, 4]) > 0.99
    assert proj.explained[0] > proj.explained[1] > 0.05
    assert proj.apply(data[:3]).shape == (3, 2)
    assert np.allclose(fit_pca(data).components, proj.components)  # deterministic signs
    with pytest.raises(ValueError):
        fit_pca(data[:1])


def test_sample_rows() -> None:
    assert sample_rows(5, 10).tolist() == [0, 1, 2, 3, 4]
    rows = sample_rows(1000, 10, seed=3)
    assert len(set(rows.tolist())) == 10 and rows.tolist() == sorted(rows.tolist())
    assert rows.tolist() == sample_rows(1000, 10, seed=3).tolist()


# ---------------------------------------------------------------- ui.figures

def _traces(fig: go.Figure) -> list[str]:
    return [t.name for t in fig.data]


def test_crossover_draws_ours_and_the_papers_in_subset_order() -> None:
    fig = figures.crossover(_main_table(), paper.main_points(PAPER), "recall")
    assert _traces(fig)[:2] == ["RtP (ours)", "PtR (ours)"] and any("paper" in n for n in _traces(fig))
    assert list(fig.data[0].x) == ["G1_instruction", "G2_instruction"]
    json.loads(fig.to_json())  # serialisable for the browser
    assert all(t.mode == "markers" for t in fig.data)  # subsets are categories: no line joins them
    theirs = [t for t in fig.data if "paper" in t.name]
    assert [t.offsetgroup for t in theirs] == ["rtp", "ptr"] == [t.offsetgroup for t in fig.data[:2]]  # on ours' spot
    assert fig.layout.scattermode == "group" and fig.layout.xaxis.title.text is None
    named = figures.crossover(_main_table(), paper.main_points(PAPER), "recall", 5, "offline heuristic, not an LLM",
                              "relevant")
    assert _traces(named)[1] == "PtR (ours: offline heuristic, not an LLM)"
    assert "behaves like api_list" in named.layout.xaxis.title.text  # an axis title: room kept, above the legend
    blank = figures.crossover(_main_table().iloc[0:0], paper.main_points(PAPER))
    assert not blank.data and "bench main" in blank.layout.annotations[0].text


def test_other_figures_build_from_reader_shaped_frames() -> None:
    sweep = pd.DataFrame({"subset": ["G1_instruction"] * 4, "arch": ["rtp", "rtp", "ptr", "ptr"], "k": [1, 5, 1, 5],
                          "recall_mean": [0.2, 0.37, 0.1, 0.29], "recall_std": [0, 0, 0.01, 0.01],
                          "precision_mean": [0.5, 0.27, 0.4, 0.2], "precision_std": [0, 0, 0.01, 0.01]})
    assert len(figures.ksweep(sweep, paper.ksweep_points(PAPER)).data) >= 3
    scale = pd.DataFrame({"subset": ["G1_instruction"] * 2, "size": [1000, 47038], "arch": ["rtp", "ptr"],
                          "recall_mean": [0.5, 0.3], "recall_std": [0.01, 0.01],
                          "divergence_not_identical": [0.9, 0.98], "divergence_disjoint": [0.1, 0.2]})
    scaled = figures.scaling(scale, paper.scaling_divergence_points(PAPER))
    assert "G1 divergence (paper)" in _traces(scaled)
    ticks = dict(zip(scaled.layout.xaxis.tickvals, scaled.layout.xaxis.ticktext))
    assert ticks[1000] == "1k" and ticks[47038] == "47k" and scaled.layout.xaxis.minor.showgrid is False
    pq = _per_query()
    assert sum(len(t.x) for t in figures.per_query_scatter(pq).data if t.mode == "markers") == 3
    cost = pd.DataFrame({"subset": ["G1_instruction"], "rtp_tokens": [100.0], "ptr_discovery_tokens": [180.0],
                         "ptr_planner_tokens": [110.0]})
    assert _traces(figures.token_cost(cost)) == ["RtP planner", "PtR planner", "PtR stub writing"]
    assert not figures.token_cost(cost.assign(rtp_tokens=0.0, ptr_discovery_tokens=0.0, ptr_planner_tokens=0.0)).data
    cos = pd.DataFrame({"subset": ["G1_instruction"] * 3, "cosine": [0.8, 0.9, 0.7], "correct": [True, False, True]})
    assert len(figures.cosine_hist(cos, paper.stub_cosine_points(PAPER)).data) == 2
    bars = figures.category_bars(pd.DataFrame({"category": ["<b>x</b>", "Data"], "apis": [3, 9]}))
    assert "&lt;b&gt;" in bars.data[0].y[0]
    background = pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0], "label": ["a/b", "<i>c</i>"], "category": ["", "X"]})
    overlay = pd.DataFrame({"x": [0.5], "y": [0.5], "kind": ["query"], "label": ["q"]})
    fig = figures.embedding_map(background, overlay)
    assert _traces(fig) == ["other or none (1)", "X (1)", "query"]  # grey underneath, categories, then the query
    assert "&lt;i&gt;" in fig.data[1].text[0]


def test_router_chart_draws_the_curve_the_fixed_policies_and_the_threshold() -> None:
    from core.analysis import router

    rng = np.random.default_rng(0)
    top1 = rng.uniform(0.3, 0.9, 60)
    per_query = pd.DataFrame({"subset": "G1_instruction", "query_id": range(60), "rtp_top1": top1,
                              "rtp_recall": (top1 >= 0.6).astype(float), "ptr_recall": (top1 < 0.6).astype(float)})
    table = router.router_table(router.cross_validate(per_query))
    fit = router.fit_threshold(per_query)
    fig = figures.router_curve(router.threshold_curve(per_query), table, fit.threshold)
    names = [t.name for t in fig.data]
    assert names[:2] == ["routed (in-sample)", "share sent to PtR"]
    assert any(n.startswith("per-query oracle (1.000)") for n in names) and len(names) == 6
    [router_point] = [t for t in fig.data if t.name.startswith("router, cross-validated")]
    assert router_point.mode == "markers" and fig.data[-1] is router_point  # drawn last, on top of the lines
    assert list(fig.layout.yaxis2.tickvals) == [0, 0.25, 0.5, 0.75, 1]
    [tau] = [a for a in fig.layout.annotations if "fitted τ" in (a.text or "")]
    assert tau.yref == "paper" and tau.y == 1.0  # above the plot, clear of the lines
    blank = figures.router_curve(pd.DataFrame(columns=["threshold", "recall", "share_to_ptr"]),
                                 router.router_table(router.cross_validate(per_query.iloc[:0])), None)
    assert "No per-query results" in blank.layout.annotations[0].text


def test_the_documented_registry_hint_is_the_shipped_index_or_a_measured_rate(tmp_path) -> None:
    """While the full registry embeds, the sidebar offers the documented one: ready at once when its shipped
    index matches, else timed at the running build's measured rate, never a guess."""
    from core.settings import Settings
    from ui.index_job import IndexJob
    from ui.widgets import _documented_hint

    data = PROJECT_ROOT / "data" / "toolbench"
    shipped = Settings.from_env(env={"TOOLBENCH_DATA": str(data), "CACHE_DIR": str(tmp_path)})
    job = IndexJob("full", shipped)
    assert _documented_hint(shipped, job) == "ready at once from the shipped index"
    elsewhere = shipped.with_(index_dir=tmp_path / "no-index")
    assert "measured its speed" in _documented_hint(elsewhere, job)
    job.progress(1_000, 47_038)
    job.first_progress -= 2.0  # as if the next report came two seconds later
    job.progress(1_500, 47_038)
    rate = job.rate
    assert rate is not None and 200 < rate < 260
    hint = _documented_hint(elsewhere, job)
    assert hint == f"about {4940 / rate:.0f} s to embed at this build's measured {rate:.0f} APIs/s"
