"""Results: the stored study — main table, crossover, k sweep, scaling, per-query scatter, cost, planner.

Every chart overlays the paper's points where the paper gives them, and every table downloads.
"""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from core.analysis.reader import ResultsReader
from core.analysis import tables as analysis, router
from core.data.toolbench import subset_order
from core.study import catalog
from core.analysis import paper
from ui import figures, tables
from ui.safe import md
from ui.page_settings import current_settings
from ui.resources import db_figure
from ui.widgets import download_buttons, results_ready, safe_read

settings = current_settings()
gold = st.session_state.get("gold", "api_list")
st.title("Results")
if not results_ready(settings):
    st.stop()

runs = safe_read(settings, ResultsReader.runs)
mains = runs[(runs["kind"] == "main") & (runs["status"] == "complete")] if isinstance(runs, pd.DataFrame) else None
backends = sorted(mains["llm_backend"].unique().tolist()) if mains is not None and len(mains) else []
left, right = st.columns([1, 3])
backend = left.selectbox("Runs of backend", [None, *backends],
                         format_func=lambda b: "latest main study" if b is None else b,
                         help="Tables use the latest complete runs of one setup (registry, model, backend, prompts).")
setup = safe_read(settings, ResultsReader.setup, backend=backend)
if not setup:
    st.info("No complete main study for this choice yet.")
    st.stop()
right.caption(f"Setup: {md(setup['backend_label'], 60)} · {md(setup['embedding_model'], 60)} · registry "
              f"{md(setup['registry_name'])} ({setup['registry_size']:,} APIs) · k = {setup['k']} · {setup['runs']} run(s) · "
              f"gold = **{gold}** · commit {md(str(setup['git_commit'])[:10])}")
ref = paper.load_paper(settings.root / "data" / "paper_reference.json")


def main_tab() -> None:
    """The main comparison: table, paired tests, crossover chart beside the paper's."""
    main = safe_read(settings, ResultsReader.main_table, gold=gold, backend=backend)
    if main is not None:
        st.dataframe(tables.main_table_styler(main), hide_index=True, width="stretch")
        st.caption("Mean ± std over runs; the better side in bold; p-values from the test named, over runs.")
        download_buttons(main, f"main_table_{gold}")
        paired = safe_read(settings, ResultsReader.paired_tests, gold=gold, k=int(setup["k"]), backend=backend)
        if paired is not None:
            st.markdown("**Paired over queries** — meaningful even when runs do not vary (a deterministic backend)")
            st.dataframe(paired, hide_index=True, width="stretch")
            st.caption(analysis.PAIRED_TESTS + "; p = NaN when every pair is identical.")
            download_buttons(paired, f"paired_tests_{gold}")
        metric = st.radio("Chart metric", sorted(main["metric"].unique(), key=tables.metric_rank), horizontal=True,
                          key="res_metric")
        chart, side = st.columns([3, 2])
        chart.plotly_chart(db_figure(settings, ("crossover", gold, backend, metric), lambda: figures.crossover(
            main, paper.main_points(ref), metric, int(setup["k"]))), width="stretch")
        with side:
            st.markdown("**The paper** (Gemini 2.5 Flash)")
            points = paper.main_points(ref)
            st.dataframe(tables.paper_table(points[points["metric"] == metric]), hide_index=True, width="stretch")


def ksweep_tab() -> None:
    """Recall or precision against k, ours beside the paper's."""
    sweep = safe_read(settings, ResultsReader.ksweep, gold=gold, backend=backend)
    if sweep is not None:
        metric = st.radio("Metric", ["recall", "precision"], horizontal=True, key="res_k_metric")
        st.plotly_chart(db_figure(settings, ("ksweep", gold, backend, metric),
                                  lambda: figures.ksweep(sweep, paper.ksweep_points(ref), metric)), width="stretch")
        st.dataframe(sweep, hide_index=True, width="stretch")
        download_buttons(sweep, f"ksweep_{gold}")


def scaling_tab() -> None:
    """Recall and divergence against registry size."""
    scale = safe_read(settings, ResultsReader.scaling, gold=gold, backend=backend)
    if scale is not None:
        st.plotly_chart(db_figure(settings, ("scaling", gold, backend),
                                  lambda: figures.scaling(scale, paper.scaling_divergence_points(ref))), width="stretch")
        st.dataframe(scale, hide_index=True, width="stretch")
        download_buttons(scale, f"scaling_{gold}")
        notes = safe_read(settings, ResultsReader.scaling_notes, backend=backend)
        if isinstance(notes, pd.DataFrame) and len(notes):
            st.caption("Sizes skipped:")
            st.dataframe(notes, hide_index=True)


def per_query_tab() -> None:
    """RtP vs PtR recall per query, and win counts beside the paper's."""
    k = int(setup["k"])
    per_query = safe_read(settings, ResultsReader.per_query, None, gold=gold, k=k, backend=backend)
    if per_query is not None:
        subsets = subset_order(per_query["subset"])
        subset = st.selectbox("Subset", subsets, key="res_pq_subset") if subsets else None
        chart, side = st.columns([3, 2])
        chart.plotly_chart(db_figure(settings, ("per_query", gold, backend, subset),
                                     lambda: figures.per_query_scatter(per_query[per_query["subset"] == subset])),
                           width="stretch")
        with side:
            wins = safe_read(settings, ResultsReader.win_counts, gold=gold, backend=backend)
            if wins is not None:
                st.markdown(f"**Wins per subset** (ours, gold = {gold})")
                st.dataframe(wins, hide_index=True, width="stretch")
                download_buttons(wins, f"win_counts_{gold}")
            st.markdown("**The paper's wins** (k = 5)")
            st.dataframe(paper.wins_table(ref), hide_index=True, width="stretch")
        st.dataframe(per_query, hide_index=True, width="stretch")
        download_buttons(per_query, f"per_query_{gold}_k{k}")


def beyond_tab() -> None:
    """Hybrid discovery and the adaptive router: what the paper proposed or left open."""
    k = int(setup["k"])
    st.markdown("**Hybrid discovery.** PtR's stubs plus the raw query as one more search, merged by PtR's own rule "
                "(each API keeps its best similarity). It needs no extra LLM call and keeps RtP's whole-query match "
                "for requests that name one tool.")
    hybrid = safe_read(settings, ResultsReader.hybrid_table, gold=gold, backend=backend)
    if isinstance(hybrid, pd.DataFrame):
        st.plotly_chart(db_figure(settings, ("hybrid", gold, backend), lambda: figures.hybrid_bars(hybrid, k)),
                        width="stretch")
        st.dataframe(hybrid, hide_index=True, width="stretch")
        st.caption(md(analysis.HYBRID_NOTE, 800))
        download_buttons(hybrid, f"hybrid_{gold}")
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
            curve, rtable, fit.get("threshold"))), width="stretch")
        st.dataframe(rtable, hide_index=True, width="stretch")
        st.caption(md(router.ROUTER_NOTE, 800))
        st.caption(f"Threshold fitted on all {fit['n']:,} queries: **{fit['threshold']:.3f}** (sends "
                   f"{fit['share_to_ptr']:.0%} to PtR; in-sample recall {fit['in_sample_recall']:.3f}); per-fold "
                   f"thresholds {', '.join(f'{t:.3f}' for t in fit['fold_thresholds'])}. Spearman ρ of the top-1 "
                   f"cosine with PtR − RtP recall: {signal.get('spearman_rho', math.nan):+.3f} "
                   f"(p = {signal.get('p', math.nan):.3g}).")
        download_buttons(rtable, f"router_{gold}_k{k}")
    elif rtable is not None:
        st.info("The router needs stored per-query results of both architectures.")


def cost_tab() -> None:
    """Tokens per query and what routing by subset would save."""
    cost = safe_read(settings, ResultsReader.cost, backend=backend)
    if cost is not None:
        st.plotly_chart(db_figure(settings, ("cost", backend), lambda: figures.token_cost(cost)), width="stretch")
        reported = ref.get("cost", {})
        st.caption("The paper reports discovery output of "
                   f"{'–'.join(str(v) for v in reported.get('discovery_output_tokens_per_query', []))} tokens per query "
                   f"and a PtR token overhead of {'–'.join(f'{v:.0%}' for v in reported.get('ptr_token_overhead', []))}.")
        st.dataframe(cost, hide_index=True, width="stretch")
        download_buttons(cost, "cost")
        savings = safe_read(settings, ResultsReader.routing_savings, backend=backend)
        if savings:
            st.markdown("**Routing by subset** (G1 → RtP, G2/G3 → PtR), the paper's estimate of what routing "
                        "saves; the *Beyond the paper* tab routes per query instead")
            st.json(savings)


def planner_tab() -> None:
    """Planner trajectory metrics and tool-selection divergence."""
    trajectory = safe_read(settings, ResultsReader.trajectory, gold=gold, backend=backend)
    if trajectory is not None:
        st.dataframe(trajectory, hide_index=True, width="stretch")
        download_buttons(trajectory, f"trajectory_{gold}")
    divergence = safe_read(settings, ResultsReader.divergence, backend=backend)
    if divergence is not None:
        st.markdown("**Divergence**: how often the two architectures retrieve different top-k sets")
        st.dataframe(divergence, hide_index=True, width="stretch")
        download_buttons(divergence, "divergence")


def runs_tab() -> None:
    """The declared studies with their stored runs, then every stored run with its provenance."""
    if isinstance(runs, pd.DataFrame):
        complete = runs[runs["status"] == "complete"]["kind"].value_counts()
        st.dataframe(pd.DataFrame([{"study": s.name, "what": s.help, "LLM calls": s.calls_llm,
                                    "beyond the paper": s.beyond_paper, "feeds": ", ".join(s.sections),
                                    "complete runs": int(complete.get(s.name, 0))} for s in catalog.STUDIES]),
                     hide_index=True, width="stretch")
        st.dataframe(runs, hide_index=True, width="stretch")
        download_buttons(runs, "runs")


def study_tab(study: catalog.Study):
    """A declared study without a tab of its own: its runs' recall and precision per subset, arch and k."""
    def render() -> None:
        table = safe_read(settings, ResultsReader.study_table, study.name, gold=gold, backend=backend)
        if table is not None:
            st.caption(md(study.help, 200))
            st.dataframe(table, hide_index=True, width="stretch")
            download_buttons(table, f"{study.name}_{gold}")
    return render


def backends_tab() -> None:
    """Every backend's latest study side by side with the paper: leaderboard, crossover, planner, stubs."""
    from core.analysis.report import leaderboard_wide

    ours = safe_read(settings, ResultsReader.leaderboard, gold=gold)
    if not isinstance(ours, pd.DataFrame):
        return
    board = pd.concat([ours, paper.leaderboard_rows(ref)], ignore_index=True)
    st.markdown(f"**Leaderboard** (k = 5, gold = {gold}): recall@5 and precision@5 per subset, n = queries per "
                "mean. Each backend's latest study; the paper's Gemini 2.5 Flash rows are its reported figures.")
    wide = leaderboard_wide(board)
    st.dataframe(wide, hide_index=True, width="stretch")
    download_buttons(wide, f"leaderboard_{gold}")
    metric = st.radio("Chart metric", ["recall", "precision"], horizontal=True, key="backends_metric")
    st.plotly_chart(db_figure(settings, ("crossover_backends", gold, metric),
                              lambda: figures.crossover_backends(board, metric)), width="stretch")
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
               "(Results → Planner shows the paper's trajectory figures in full).")


TABS = {"Main table": main_tab, "k sweep": ksweep_tab, "Scaling": scaling_tab, "Per query": per_query_tab,
        "Beyond the paper": beyond_tab, "Backends": backends_tab, "Token cost": cost_tab, "Planner": planner_tab,
        "Runs": runs_tab}
STUDY_TABS = {"main": "Main table", "ksweep": "k sweep", "scaling": "Scaling", "hybrid": "Beyond the paper"}
TABS.update({s.name: study_tab(s) for s in catalog.STUDIES if s.name not in STUDY_TABS})
# Only the open tab runs and is sent to the browser (8 tabs of charts made warm loads slow); ?tab= in the
# URL names it, so a tab can be shared.
for tab, render in zip(st.tabs(list(TABS), key="tab", bind="query-params"), TABS.values()):
    if tab.open:
        with tab:
            render()
