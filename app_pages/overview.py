"""Overview: what the study compares; whether each stored study shows the paper's crossover, in its own numbers,
with every system's PtR − RtP per subset in one chart; the leaderboard; the model-size answer; and what is loaded."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis.headlines import crossover_lines
from core.analysis.reader import ResultsReader
from core.data.loaders import queries_for
from core.settings import DataNotFoundError
from core.store.dburl import shown
from ui import figures
from ui.safe import md
from ui.index_job import index_job
from ui.leaderboard import gains_table, leaderboard, leaderboard_board
from ui.model_size import model_size
from ui.registry_charts import across_registries
from ui.page_settings import current_settings
from ui.resources import db_figure
from ui.widgets import results_ready, safe_read

settings = current_settings()
gold = st.session_state.get("gold", "api_list")

st.title("Tool Discovery Lab")
st.markdown(
    "**Retrieve-then-Plan (RtP)** embeds the user's request as it is and hands the k most similar of ~47,000 APIs "
    "to the planner. **Plan-then-Retrieve (PtR)** first has an LLM write abstract tool stubs (hypothesised function "
    "names with a reason), searches with each stub and keeps the best-scoring k of their union. The paper reports "
    "RtP better on single-tool queries (G1) and PtR better on multi-tool queries (G2, G3): a crossover. Below, each "
    "stored study says whether it shows one, from its own numbers.")

if results_ready(settings):
    board = leaderboard_board(settings, gold)
    if board is not None and not board.empty:
        st.markdown("\n".join(f"- **{md(system, 80)}**: {md(verdict, 300)}"
                               for system, verdict in crossover_lines(board)))
        gains = gains_table(settings, gold)
        if gains is not None:
            st.plotly_chart(db_figure(settings, ("subset_gains", gold), lambda: figures.subset_gains(gains, gold=gold),
                                      {"gold": gold, "k": 5}), width="stretch")
            st.caption("PtR − RtP recall@5 per subset, a bar per discovery system in its latest stored study (above "
                       "zero, PtR found more of the gold), with paired bootstrap 95% intervals over queries; the "
                       "paper's Gemini 2.5 Flash hatched, from its reported means (no interval). A system with no bar "
                       "on a subset has no stored study of it. Results → Main table has each study's paired tests, "
                       "Results → Leaderboard both sides' recall and precision.")

    st.subheader("Across registries")
    across_registries(settings, gold)

    st.subheader("Leaderboard")
    st.caption("Every backend's latest stored study beside the paper: the Results page has the same table and the "
               "tests behind it.")
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
    st.dataframe(pd.DataFrame({"": ["Data", "Registry", "Embedding model", "Index", "LLM backend", "Results"],
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
