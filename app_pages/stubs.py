"""Stubs: what PtR's hypothesised tools look like, when they match, and where they help or hurt."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis.brand_names import brand_name_marks, erasure_counts
from core.analysis.provenance import provenance, provenance_line
from core.analysis.reader import ResultsReader
from core.data.loaders import queries_for
from core.settings import DataNotFoundError
from core.data.toolbench import subset_order
from core.analysis import paper
from ui import figures, tables
from ui.page_settings import chosen_study, current_settings
from ui.safe import md
from ui.resources import db_figure
from ui.widgets import download_buttons, results_ready, safe_read

settings = current_settings()
gold = st.session_state.get("gold", "api_list")
st.title("Stubs")
if not results_ready(settings):
    st.stop()
ref = paper.load_paper(settings.root / "data" / "paper_reference.json")
try:
    queries = {(q.subset, q.query_id): q for q in queries_for(settings)}
except DataNotFoundError:
    queries = {}
texts = {uid: q.query for uid, q in queries.items()}

study = chosen_study()
setup = safe_read(settings, ResultsReader.setup, backend=study) or {}
source = provenance(setup, gold)
st.caption(md(provenance_line(source), 300))
st.subheader("Stub statistics per subset")
stats = safe_read(settings, ResultsReader.stub_stats, backend=study)
if stats is not None:
    st.dataframe(stats, hide_index=True, width="stretch")
    download_buttons(stats, "stub_stats", source)
    reported = ref.get("stubs", {})
    st.caption("The paper: "
               f"{'–'.join(map(str, reported.get('stubs_per_query', [])))} stubs per query, unique-name rate "
               f"{'–'.join(map(str, reported.get('unique_name_rate', [])))}, top-1 match rate "
               + ", ".join(f"{g} {v}" for g, v in reported.get("top1_match_rate", {}).items()) + ".")

st.subheader("Does a stub's top-1 cosine tell a right match from a wrong one?")
cosines = safe_read(settings, ResultsReader.stub_cosines, backend=study)
if isinstance(cosines, pd.DataFrame):
    subsets = subset_order(cosines["subset"])
    subset = st.selectbox("Subset", subsets, key="stub_cos_subset", bind="query-params") if subsets else None
    part = cosines[cosines["subset"] == subset]
    if gold == "relevant" and "correct_relevant" in part.columns:
        part = part.assign(correct=part["correct_relevant"])
    marks = paper.stub_cosine_points(ref)
    st.plotly_chart(db_figure(settings, ("stub_cosines", gold, subset),
                              lambda: figures.cosine_hist(part, marks[marks["subset"] == subset])), width="stretch")
    st.caption(f"Correct = the stub's top-1 API is gold ({gold}).")
    download_buttons(cosines, "stub_cosines", source)

k = int(setup.get("k", 5))
table_subsets = subset_order(stats["subset"]) if isinstance(stats, pd.DataFrame) else []
subset_filter = st.selectbox("Subset for the tables below", ["all", *table_subsets], key="stub_subset",
                             bind="query-params")
subset_filter = None if subset_filter == "all" else subset_filter


def show(df: object, name: str, empty: str, table_gold: str = gold) -> None:
    if not isinstance(df, pd.DataFrame):
        return
    if df.empty:
        st.caption(empty)
        return
    rows = tables.join_queries(df, texts).assign(inspect=tables.inspector_links(df, k))
    first = ["subset", "query_id", "inspect", "query"]
    st.dataframe(rows, hide_index=True, width="stretch", column_order=first + [c for c in rows if c not in first],
                 column_config={"query": st.column_config.TextColumn("query", width="large"),
                                "inspect": st.column_config.LinkColumn("open", display_text="Inspector ↗")})
    download_buttons(rows.drop(columns=["inspect"]), name, provenance(setup, table_gold))


st.subheader("PtR finds none, RtP finds all: brand names erased?")
losses = safe_read(settings, ResultsReader.brand_name_losses, subset_filter, backend=study)
if isinstance(losses, pd.DataFrame):
    losses = brand_name_marks(losses, queries)
    n, named, dropped = erasure_counts(losses)
    found = (f"In {named:,} of them the request holds a gold API's tool name (tool_in_request); the stubs drop every "
             f"such name in {dropped:,}, the paper's brand-name erasure, and keep one in {named - dropped:,}."
             if queries else "Without the query texts (TOOLBENCH_DATA) the requests' tool names cannot be checked.")
    st.caption(f"PtR recall 0 while RtP finds every relevant API (gold = relevant, ToolBench's 2–3 APIs per query): "
               f"{n:,} queries. {found}" if n else "")
show(losses, "brand_name_losses", "No such queries in this selection.", "relevant")

st.subheader("Decomposition wins")
st.caption("PtR recall above RtP's with two or more stubs: splitting the request found what the whole missed "
           f"(gold = {gold}).")
show(safe_read(settings, ResultsReader.decomposition_wins, subset_filter, gold=gold, backend=study),
     "decomposition_wins", "No such queries in this selection.")
