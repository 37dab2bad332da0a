"""Results: the stored study — main table, crossover, k sweep, scaling, per-query scatter, cost, planner.

Every chart overlays the paper's points where the paper gives them, and every table downloads.
"""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from core.analysis.headlines import crossover_verdict, main_differences
from core.analysis.provenance import provenance, provenance_line
from core.analysis.reader import ResultsReader
from core.analysis.retriever_axis import paper_axis
from core.data.loaders import queries_for
from core.settings import DataNotFoundError
from core.analysis import tables as analysis, router
from core.data.toolbench import subset_order
from core.study import catalog
from core.analysis import index_scale, paper
from ui import figures, tables
from ui.safe import md
from ui.page_settings import chosen_study, current_settings
from ui.leaderboard import leaderboard
from ui.resources import db_figure
from ui.model_size import model_size
from ui.widgets import accept_slug, download_buttons, results_ready, safe_read

settings = current_settings()
gold = st.session_state.get("gold", "api_list")
st.title("Results")
if not results_ready(settings):
    st.stop()

backend = chosen_study()  # the sidebar's Study (None: DEFAULT_STUDY_RULE)
setup = safe_read(settings, ResultsReader.setup, backend=backend)
if not setup:
    st.info("No complete main study for this choice yet.")
    st.stop()
source = provenance(setup, gold)
system = setup["backend_label"]
st.caption(f"Study: {md(provenance_line(source), 300)} · {setup['runs']} run(s)"
           + (" · the default: the largest discovery model's complete study of the paper's three instruction subsets"
              if backend is None else "")
           + ". Every download and chart carries these fields; the sidebar's Study picks another (its help says the "
             "whole rule).")
ref = paper.load_paper(settings.root / "data" / "paper_reference.json")


def study_for(kind: str) -> tuple[str | None, dict]:
    """(system, provenance) of the runs of `kind` this tab shows: the chosen study's, or by DEFAULT_STUDY_RULE the
    latest study that has them, said in one line."""
    found = safe_read(settings, ResultsReader.study_with, kind, backend=backend)
    if found == backend or found is None:
        return backend, source
    if found == "":
        return backend, source  # no study has any: the tab's own empty message says what to run
    other = safe_read(settings, ResultsReader.setup, backend=found) or {}
    label = other.get("backend_label") or found
    st.info(f"The chosen study ({md(system, 80)}) has no {kind} runs; this tab shows the latest study that has "
            f"them: {md(label, 80)}.", icon=":material/swap_horiz:")
    return found, provenance(other, gold) if other else source


def main_tab() -> None:
    """The main comparison: per-query intervals and paired tests (run-level tests only where runs vary), the
    crossover chart beside the paper's."""
    main = safe_read(settings, ResultsReader.main_table, gold=gold, backend=backend)
    if main is None:
        return
    k = int(setup["k"])
    paired = safe_read(settings, ResultsReader.paired_tests, gold=gold, k=k, backend=backend)
    vary = tables.runs_can_vary(main, int(setup["runs"]))
    if paired is not None:
        st.markdown("**RtP vs PtR, paired over queries**: means with bootstrap 95% intervals over queries")
        st.dataframe(tables.paired_display(paired), hide_index=True, width="stretch")
        st.caption(analysis.PAIRED_TESTS + "; p = – when every pair is identical.")
        download_buttons(paired, f"paired_tests_{gold}", source)
    if vary:
        st.markdown("**Over runs**: mean ± std, with the run-level test named")
        st.dataframe(tables.main_table_styler(main), hide_index=True, width="stretch")
        st.caption("Mean ± std over runs; the better side in bold.")
    else:
        st.markdown("**All metrics** (means; the better side in bold)")
        st.dataframe(tables.run_level_display(main), hide_index=True, width="stretch")
        st.caption(f"{setup['runs']} run(s) that cannot differ ({md(system, 60)} is deterministic), so no run-level "
                   "test is shown: the intervals and tests over queries above are the meaningful ones.")
    st.caption(md(analysis.PASS_RATE_DEFINITION, 300))
    download_buttons(main, f"main_table_{gold}", source)
    metric = st.radio("Chart metric", sorted(main["metric"].unique(), key=tables.metric_rank), horizontal=True,
                      key="res_metric", bind="query-params")
    st.markdown(f"**{md(system, 80)}**: {md(crossover_verdict(main_differences(main, metric), metric, k), 300)}")
    # The whole width: beside the paper's table, a 1,000 px window left the chart 316 px, too narrow to read.
    st.plotly_chart(db_figure(settings, ("crossover", gold, backend, metric), lambda: figures.crossover(
        main, paper.main_points(ref), metric, k, system, gold), source), width="stretch")
    paper_metric = "pass_rate" if metric == "pass_rate_proxy" else metric
    st.markdown("**The paper** (Gemini 2.5 Flash)")
    points = paper.main_points(ref)
    st.dataframe(tables.paper_table(points[points["metric"] == paper_metric]), hide_index=True, width="stretch")
    if metric == "pass_rate_proxy":
        st.caption("The paper's pass rate is ToolBench's LLM-judged one (an evaluator model decides whether the "
                   "task was solved); ours is a proxy from the planner's reply alone, so the two are shown one "
                   "above the other, not on one chart.")


def ksweep_tab() -> None:
    """Recall or precision against k, ours beside the paper's."""
    shown, shown_source = study_for("ksweep")
    sweep = safe_read(settings, ResultsReader.ksweep, gold=gold, backend=shown)
    if sweep is not None:
        metric = st.radio("Metric", ["recall", "precision"], horizontal=True, key="res_k_metric", bind="query-params")
        st.plotly_chart(db_figure(settings, ("ksweep", gold, shown, metric), lambda: figures.ksweep(
            sweep, paper.ksweep_points(ref), metric, shown_source["backend_label"]), shown_source), width="stretch")
        st.dataframe(sweep, hide_index=True, width="stretch")
        download_buttons(sweep, f"ksweep_{gold}", shown_source)


def scaling_tab() -> None:
    """Recall and divergence against registry size."""
    shown, shown_source = study_for("scaling")
    scale = safe_read(settings, ResultsReader.scaling, gold=gold, backend=shown)
    if scale is not None:
        st.plotly_chart(db_figure(settings, ("scaling", gold, shown),
                                  lambda: figures.scaling(scale, paper.scaling_divergence_points(ref)), shown_source),
                        width="stretch")
        st.dataframe(scale, hide_index=True, width="stretch")
        download_buttons(scale, f"scaling_{gold}", shown_source)
        notes = safe_read(settings, ResultsReader.scaling_notes, backend=shown)
        if isinstance(notes, pd.DataFrame) and len(notes):
            st.caption("Sizes skipped:")
            st.dataframe(notes, hide_index=True)
    beyond_the_registry(scale if isinstance(scale, pd.DataFrame) else pd.DataFrame(columns=["subset", "size"]))


def beyond_the_registry(scale: pd.DataFrame) -> None:
    """The curve continued with SYNTHETIC distractors (the distractors study) and the index benchmark's table."""
    st.subheader("Beyond the real registry: distractor scale (synthetic)")
    shown, shown_source = study_for("distractors")
    far = safe_read(settings, ResultsReader.distractors, gold=gold, backend=shown)
    if far is not None:
        st.plotly_chart(db_figure(settings, ("distractors", gold, shown), lambda: figures.distractor_scale(
            scale, far, paper.scaling_divergence_points(ref)), shown_source), width="stretch")
        st.caption(md(analysis.DISTRACTOR_NOTE, 500))
        st.dataframe(far, hide_index=True, width="stretch")
        download_buttons(far, f"distractors_{gold}", shown_source)
    report = index_scale.load_index_scale(settings.root)
    if report is None:
        st.info("No index benchmark stored yet: run `python -m core index-scale` (heavy: about half an hour).")
        return
    st.markdown("**Exact vs approximate search** (flat: exact; hnsw, ivf: FAISS, `INDEX=` setting), "
                "real registry and synthetic distractor scale")
    table = index_scale.index_table(report)
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(md(index_scale.caption(report), 900))
    fields = index_scale.provenance_fields(report)
    download_buttons(table, "index_scale", fields)
    with st.expander("Search-time parameter sweeps and the distractors' distribution check"):
        sweep = index_scale.sweep_table(report)
        st.dataframe(sweep, hide_index=True, width="stretch")
        download_buttons(sweep, "index_scale_sweep", fields)
        st.dataframe(index_scale.evidence_table(report), hide_index=True, width="stretch")
        st.caption("Cosine quantiles of real and synthetic vectors and the two-sample KS statistic "
                   "(0: identical distributions).")


def per_query_tab() -> None:
    """RtP vs PtR recall per query (a click opens the Inspector), its table, and win counts beside the paper's."""
    k = int(setup["k"])
    per_query = safe_read(settings, ResultsReader.per_query, None, gold=gold, k=k, backend=backend)
    if per_query is None:
        return
    subsets = subset_order(per_query["subset"])
    subset = st.selectbox("Subset", subsets, key="res_pq_subset", bind="query-params") if subsets else None
    part = per_query[per_query["subset"] == subset]
    chart, side = st.columns([3, 2])
    with chart:
        picked = st.plotly_chart(db_figure(settings, ("per_query", gold, backend, subset),
                                           lambda: figures.per_query_scatter(part), source),
                                 width="stretch", on_select="rerun", selection_mode="points", key="pq_scatter")
        st.caption("Click a point to open that query in the Inspector.")
    points = (picked or {}).get("selection", {}).get("points") or []
    if points and points[0].get("customdata"):
        st.switch_page("app_pages/inspector.py", query_params={"qid": str(points[0]["customdata"][-1]), "k": str(k)})
    with side:
        wins = safe_read(settings, ResultsReader.win_counts, gold=gold, backend=backend)
        if wins is not None:
            st.markdown(f"**Wins per subset** (ours, gold = {gold})")
            st.dataframe(wins, hide_index=True, width="stretch")
            download_buttons(wins, f"win_counts_{gold}", source)
        st.markdown("**The paper's wins** (k = 5)")
        st.dataframe(paper.wins_table(ref), hide_index=True, width="stretch")
    rows = tables.join_queries(part, query_texts())
    rows = rows.assign(inspect=tables.inspector_links(rows, k))
    first = ["subset", "query_id", "inspect", "query"]
    st.markdown(f"**{len(rows):,} queries of {md(subset or '–')}**")
    st.dataframe(rows, hide_index=True, width="stretch", column_order=first + [c for c in rows if c not in first],
                 column_config={"query": st.column_config.TextColumn("query", width="large"),
                                "inspect": st.column_config.LinkColumn("open", display_text="Inspector ↗")})
    download_buttons(rows.drop(columns=["inspect"]), f"per_query_{subset}_{gold}_k{k}", source)


def query_texts() -> dict[tuple[str, int], str]:
    try:
        return {(q.subset, q.query_id): q.query for q in queries_for(settings)}
    except DataNotFoundError:
        return {}


def beyond_tab() -> None:
    """Hybrid discovery and the adaptive router: what the paper proposed or left open."""
    k = int(setup["k"])
    st.markdown("**Hybrid discovery.** PtR's stubs plus the raw query as one more search, merged by PtR's own rule "
                "(each API keeps its best similarity). It needs no extra LLM call and keeps RtP's whole-query match "
                "for requests that name one tool.")
    shown, shown_source = study_for("hybrid")
    hybrid = safe_read(settings, ResultsReader.hybrid_table, gold=gold, backend=shown)
    if isinstance(hybrid, pd.DataFrame):
        st.plotly_chart(db_figure(settings, ("hybrid", gold, shown), lambda: figures.hybrid_bars(hybrid, k),
                                  shown_source), width="stretch")
        st.dataframe(hybrid, hide_index=True, width="stretch")
        st.caption(md(analysis.HYBRID_NOTE, 800))
        download_buttons(hybrid, f"hybrid_{gold}", shown_source)
    st.divider()
    st.markdown("**Adaptive router.** The paper proposed, but did not test, routing each query by RtP's own top-1 "
                "cosine: a high score means an API reads like the whole query (RtP's strength), a low one suggests a "
                "multi-step request (PtR's). Queries routed to RtP skip the discovery call.")
    rtable = safe_read(settings, ResultsReader.router_table, gold=gold, k=k, backend=backend)
    fit = safe_read(settings, ResultsReader.router_fit, gold=gold, k=k, backend=backend)
    curve = safe_read(settings, ResultsReader.router_curve, gold=gold, k=k, backend=backend)
    signal = safe_read(settings, ResultsReader.router_signal, gold=gold, k=k, backend=backend) or {}
    if isinstance(rtable, pd.DataFrame) and isinstance(curve, pd.DataFrame) and fit:
        st.plotly_chart(db_figure(settings, ("router", gold, backend, k), lambda: figures.router_curve(
            curve, rtable, fit.threshold), source), width="stretch")
        st.dataframe(rtable, hide_index=True, width="stretch")
        st.caption(md(router.ROUTER_NOTE, 800))
        st.caption(f"Threshold fitted on all {fit.n:,} queries: **{fit.threshold:.3f}** (sends "
                   f"{fit.share_to_ptr:.0%} to PtR; in-sample recall {fit.recall:.3f}); per-fold "
                   f"thresholds {', '.join(f'{t:.3f}' for t in fit.fold_thresholds)}. Spearman ρ of the top-1 "
                   f"cosine with PtR − RtP recall: {signal.get('spearman_rho', math.nan):+.3f} "
                   f"(p = {signal.get('p', math.nan):.3g}).")
        download_buttons(rtable, f"router_{gold}_k{k}", source)
    elif rtable is not None:
        st.info("The router needs stored per-query results of both architectures.")


def cost_tab() -> None:
    """Tokens per query and what routing by subset would save, beside the paper's figures."""
    cost = safe_read(settings, ResultsReader.cost, backend=backend)
    if cost is None:
        return
    reported = ref.get("cost", {})
    token_columns = [c for c in cost.columns if c.endswith("_tokens")]
    spent = bool(len(cost) and cost[token_columns].fillna(0).to_numpy().any())
    if spent:
        st.plotly_chart(db_figure(settings, ("cost", backend), lambda: figures.token_cost(cost), source),
                        width="stretch")
        st.dataframe(cost, hide_index=True, width="stretch")
        download_buttons(cost, "cost", source)
    else:
        st.info(f"These runs used the {md(system, 60)}: it writes stubs and plans with rules, not a model, so it "
                "spends no tokens and there is nothing to chart. Pick a study with LLM runs in the sidebar (a local "
                "model, gemini) to see token cost.", icon=":material/info:")
    st.markdown("**The paper's token figures** (Gemini 2.5 Flash)")
    routing = reported.get("adaptive_routing_saves") or {}
    st.dataframe(pd.DataFrame([
        {"figure": "discovery output tokens per query", "paper": "–".join(
            str(v) for v in reported.get("discovery_output_tokens_per_query", []))},
        {"figure": "PtR token overhead over RtP", "paper": "–".join(
            f"{v:.0%}" for v in reported.get("ptr_token_overhead", []))},
        {"figure": "routing by subset saves, total tokens", "paper": f"{routing['total_tokens']:.0%}"
         if "total_tokens" in routing else "–"},
        {"figure": "routing by subset saves, discovery overhead", "paper": f"{routing['discovery_overhead']:.0%}"
         if "discovery_overhead" in routing else "–"}]), hide_index=True, width="stretch")
    savings = safe_read(settings, ResultsReader.routing_savings, backend=backend) if spent else None
    if savings:
        st.markdown("**Routing by subset, ours** (G1 → RtP, G2/G3 → PtR), the paper's estimate of what routing "
                    "saves; the *Beyond the paper* tab routes per query instead")
        st.dataframe(pd.DataFrame([{"saves, total tokens": savings.get("total_tokens"),
                                    "saves, discovery overhead": savings.get("discovery_overhead"),
                                    "to RtP": ", ".join(savings.get("routed_to_rtp", [])),
                                    "to PtR": ", ".join(savings.get("routed_to_ptr", []))}]),
                     hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(c, format="percent")
                                    for c in ("saves, total tokens", "saves, discovery overhead")})


def planner_tab() -> None:
    """Planner trajectory metrics, defined, and tool-selection divergence."""
    trajectory = safe_read(settings, ResultsReader.trajectory, gold=gold, backend=backend)
    if trajectory is not None:
        config = {name: st.column_config.NumberColumn(name, help=text, format="%.3f", width="small")
                  for name, text in tables.PLANNER_DEFINITIONS.items()}
        st.dataframe(trajectory, hide_index=True, width="stretch", column_config=config)
        with st.expander("What each column measures", expanded=True):
            st.markdown("\n".join(f"- **{name}**: {md(text, 300)}"
                                  for name, text in tables.PLANNER_DEFINITIONS.items()))
        st.caption("Paper: fidelity ≥ 0.96; selection rate RtP 0.21–0.27, PtR 0.27–0.29; wrong-tool rate on complete "
                   "misses 0.70; planner Jaccard G1 0.40, G3 0.28.")
        download_buttons(trajectory, f"trajectory_{gold}", source)
    divergence = safe_read(settings, ResultsReader.divergence, backend=backend)
    if divergence is not None:
        st.markdown("**Divergence**: how often the two architectures retrieve different top-k sets")
        st.dataframe(divergence, hide_index=True, width="stretch")
        download_buttons(divergence, "divergence", source)


def runs_tab() -> None:
    """The declared studies with their stored runs, then every stored run with its provenance."""
    runs = safe_read(settings, ResultsReader.runs)
    if isinstance(runs, pd.DataFrame):
        complete = runs[runs["status"] == "complete"]["kind"].value_counts()
        st.dataframe(pd.DataFrame([{"study": s.name, "what": s.help, "LLM calls": s.calls_llm,
                                    "beyond the paper": s.beyond_paper, "feeds": ", ".join(s.sections),
                                    "complete runs": int(complete.get(s.name, 0))} for s in catalog.STUDIES]),
                     hide_index=True, width="stretch")
        st.dataframe(runs, hide_index=True, width="stretch")
        download_buttons(runs, "runs", {"what": "every stored run, each with its own provenance columns"})


def study_tab(study: catalog.Study):
    """A declared study without a tab of its own: its runs' recall and precision per subset, arch and k."""
    def render() -> None:
        table = safe_read(settings, ResultsReader.study_table, study.name, gold=gold, backend=backend)
        if table is not None:
            st.caption(md(study.help, 200))
            st.dataframe(table, hide_index=True, width="stretch")
            download_buttons(table, f"{study.name}_{gold}", source)
    return render


def leaderboard_tab() -> None:
    """Every backend's latest study side by side with the paper: leaderboard, crossover, planner, stubs."""
    board = leaderboard(settings, gold, key="res_lb_metric")
    if board is None or board.empty:
        return
    metric = st.radio("Chart metric", ["recall", "precision"], horizontal=True, key="backends_metric",
                      bind="query-params")
    st.plotly_chart(db_figure(settings, ("crossover_backends", gold, metric),
                              lambda: figures.crossover_backends(board, metric), {"gold": gold, "k": 5}),
                    width="stretch")
    gain = analysis.ptr_gain(board, "G2_instruction")
    if len(gain):
        st.markdown("**Is PtR's G2 gain the decomposition or the model?** PtR minus RtP recall on "
                    "G2_instruction, per system (same retrieval, different stub writers):")
        st.dataframe(gain, hide_index=True, width="stretch")
    labels = {b: (safe_read(settings, ResultsReader.setup, backend=b) or {}).get("backend_label", b)
              for b in safe_read(settings, ResultsReader.backends) or []}
    for title, method, kwargs in (("Planner trajectory", ResultsReader.trajectory, {"gold": gold}),
                                  ("Stubs", ResultsReader.stub_stats, {})):
        frames = [frame.assign(system=label) for b, label in labels.items()
                  if isinstance(frame := safe_read(settings, method, backend=b, **kwargs), pd.DataFrame)]
        if frames:
            st.markdown(f"**{title} per backend**")
            st.dataframe(pd.concat(frames, ignore_index=True), hide_index=True, width="stretch")
    st.caption("Paper: selection rate RtP 0.21–0.27, PtR 0.27–0.29; stubs per query 2.4–2.5 "
               "(the Planner tab defines each measure).")


def model_size_tab() -> None:
    """Is PtR's gain the decomposition or the model? Every discovery model's study against the paper's two."""
    st.markdown("**PtR − RtP and hybrid − RtP by discovery model**: the offline heuristic (no model), each local "
                "model and any other stored backend, each in its latest study, and the paper's Gemini 2.5 Flash "
                "and gpt-oss-120b. The same retrieval code and index serve every row: only the stub writer differs.")
    model_size(settings, gold)


def retrievers_tab() -> None:
    """The retriever axis: PtR - RtP per discovery system under each embedding model, the same stubs under each."""
    table = safe_read(settings, ResultsReader.retriever_axis, gold=gold)
    if not isinstance(table, pd.DataFrame):
        return
    st.markdown("**Is PtR's multi-tool gain a crutch for a weak retriever?** Each system's stored stubs searched by "
                "every installed embedding model: only the retriever changes. all-mpnet-base-v2 stands in for the "
                "paper's gte-base (same size and dimension); it is not gte-base.")
    st.plotly_chart(figures.retriever_axis(table, paper_axis(ref)), width="stretch")
    st.dataframe(table, hide_index=True, width="stretch")
    download_buttons(table, f"retrievers_{gold}", source)
    sweep = safe_read(settings, ResultsReader.retriever_axis_ksweep, gold=gold)
    if isinstance(sweep, pd.DataFrame) and len(sweep):
        models = list(dict.fromkeys(sweep["model"]))
        model = st.selectbox("k sweep of the stubs of", models, key="res_axis_model", bind="query-params")
        st.plotly_chart(figures.retriever_ksweep(sweep, model), width="stretch")
        download_buttons(sweep, f"retrievers_ksweep_{gold}", source)


TABS = {"Main table": main_tab, "k sweep": ksweep_tab, "Scaling": scaling_tab, "Per query": per_query_tab,
        "Beyond the paper": beyond_tab, "Leaderboard": leaderboard_tab, "Model size": model_size_tab,
        "Token cost": cost_tab, "Planner": planner_tab, "Retrievers": retrievers_tab, "Runs": runs_tab}
STUDY_TABS = {"main": "Main table", "ksweep": "k sweep", "scaling": "Scaling", "hybrid": "Beyond the paper",
              "distractors": "Scaling", "retrievers": "Retrievers"}
TABS.update({s.name: study_tab(s) for s in catalog.STUDIES if s.name not in STUDY_TABS})
# Only the open tab runs and is sent to the browser (8 tabs of charts made warm loads slow); ?tab= in the
# URL names it, so a tab can be shared.
accept_slug("tab", list(TABS))
for tab, render in zip(st.tabs(list(TABS), key="tab", bind="query-params"), TABS.values()):
    if tab.open:
        with tab:
            render()
