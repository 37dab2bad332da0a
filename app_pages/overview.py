"""Overview: what the study compares, the headline crossover next to the paper's, and what is loaded."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis.provenance import provenance, provenance_line
from core.analysis.reader import ResultsReader
from core.data.loaders import queries_for
from core.settings import DataNotFoundError
from core.study.dburl import shown
from core.analysis import paper
from ui import figures, tables
from ui.safe import md
from ui.index_job import index_job
from ui.leaderboard import leaderboard
from ui.model_size import model_size
from ui.page_settings import current_settings
from ui.resources import db_figure
from ui.widgets import results_ready, safe_read

settings = current_settings()
gold = st.session_state.get("gold", "api_list")

st.title("Tool Discovery Lab")
st.markdown(
    "**Retrieve-then-Plan (RtP)** embeds the user's request as it is and hands the k most similar of ~47,000 APIs "
    "to the planner. **Plan-then-Retrieve (PtR)** first has an LLM write abstract tool stubs (hypothesised function "
    "names with a reason), searches with each stub and keeps the best-scoring k of their union. The paper finds RtP "
    "better on single-tool queries (G1) and PtR better on multi-tool queries (G2, G3): a crossover this lab "
    "reproduces, probes query by query, and extends.")

ref = paper.load_paper(settings.root / "data" / "paper_reference.json")
chart, side = st.columns([3, 2])
with chart:
    if results_ready(settings):
        main = safe_read(settings, ResultsReader.main_table, gold=gold)
        setup = safe_read(settings, ResultsReader.setup) or {}
        if main is not None and setup:
            source = provenance(setup, gold)
            chart_fig = db_figure(settings, ("crossover", gold, None, "recall"), lambda: figures.crossover(
                main, paper.main_points(ref), "recall", int(setup["k"]), setup["backend_label"], gold), source)
            st.plotly_chart(chart_fig, width="stretch")
            st.caption(f"Ours: mean ± std over {setup['runs']} run(s); {md(provenance_line(source), 300)}. "
                       "Paper: open diamonds (gte-base, Gemini 2.5 Flash, 46,984 APIs, 4 runs), on the three subsets "
                       "it reports.")
with side:
    st.markdown("**The paper's figures** (k = 5, Gemini 2.5 Flash)")
    points = paper.main_points(ref)
    st.dataframe(tables.paper_table(points[points["metric"].isin(["recall", "precision"])]), hide_index=True,
                 width="stretch")

st.subheader("Leaderboard")
st.caption("Every backend's latest stored study beside the paper: the Results page has the same table and the "
           "tests behind it.")
if results_ready(settings):
    leaderboard(settings, gold, key="lb_metric")

st.subheader("Model size")
st.caption("Is plan-then-retrieve's gain the decomposition or the model? PtR − RtP and hybrid − RtP recall@5 per "
           "discovery model, with 95% intervals; every column and the downloads are on Results → Model size.")
if results_ready(settings):
    model_size(settings, gold, compact=True)

st.subheader("Status")


def status_table() -> None:
    """Data, registry, model, index, backend and results; while the index loads, this polls once a second
    and reruns the page when it is ready (so the sidebar's index line updates too)."""
    status = safe_read(settings, ResultsReader.status) or {}
    try:
        data = f"{settings.data_dir()} · {len(queries_for(settings)):,} benchmark queries"
        job = index_job(settings)
    except DataNotFoundError as exc:
        data, registry, index = str(exc), "–", "–"
    else:
        if loading and job.finished:  # `loading` is this page run's view; fragment reruns keep polling until here
            st.rerun()
        registry = (f"{settings.registry} · {job.info.size:,} APIs" if job.info
                    else f"{settings.registry} · {'loading…' if not job.finished else '–'}")
        index = job.status
    runs = ", ".join(f"{kind} {n}" for kind, n in (status.get("kinds") or {}).items())
    st.dataframe(pd.DataFrame({"": ["ToolBench data", "Registry", "Embedding model", "Index", "LLM backend", "Results"],
                               "status": [data, registry, settings.embedding_model, index,
                                          settings.backend_label,
                                          f"{status.get('n_complete', 0):,} complete runs ({runs or 'none'}) · "
                                          f"{status.get('error') or shown(settings.results_url)}"]}),
                 hide_index=True, width="stretch")


try:
    loading = not index_job(settings).finished
except DataNotFoundError:
    loading = False
st.fragment(status_table, run_every=1.0 if loading else None)()
