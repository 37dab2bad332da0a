"""Registry: search the APIs, see the categories, and draw a query's neighbourhood on a 2-D map."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.retrieval.discovery import QueryError
from core.data.registry import UNKNOWN_CATEGORY
from core.settings import DataNotFoundError
from ui import figures, tables
from ui.safe import md
from ui.page_settings import current_settings
from ui.resources import inspect_live, map_overlay, registry_frame, registry_map
from ui.widgets import error, index_gate

SHOWN_ROWS = 500  # a search for "a" would otherwise ship 47k rows to the browser

settings = current_settings()
state = st.session_state
st.title("Registry")
try:
    frame = registry_frame(settings)
except DataNotFoundError as exc:
    error(exc)
    st.stop()

search, categories = st.tabs(["Search", "Categories"])
with search:
    text = st.text_input("Search tool, API name or description", key="reg_search",
                         placeholder="e.g. weather, currency, instagram")
    found = tables.search_registry(frame, text)
    st.caption(f"{len(found):,} of {len(frame):,} APIs ({md(settings.registry)} registry)"
               + (f"; showing the first {SHOWN_ROWS}" if len(found) > SHOWN_ROWS else ""))
    st.dataframe(found.head(SHOWN_ROWS), hide_index=True, width="stretch",
                 column_config={"description": st.column_config.TextColumn("description", width="large")})
with categories:
    counts = frame["category"].value_counts().rename_axis("category").reset_index(name="apis")
    chart, table = st.columns([3, 2])
    chart.plotly_chart(figures.category_bars(counts), width="stretch")
    table.dataframe(counts, hide_index=True, width="stretch")
    unknown = int(counts.loc[counts["category"] == UNKNOWN_CATEGORY, "apis"].sum())
    table.caption(f"{len(counts):,} categories; {unknown:,} APIs without one count as {UNKNOWN_CATEGORY}.")

st.subheader("The embedding space")
if "q" in st.query_params and state.get("map_q_applied") != st.query_params["q"]:
    state["map_q"] = state["map_q_applied"] = st.query_params["q"]
retriever = index_gate(settings)
if retriever is None:
    st.stop()
projection, background = registry_map(retriever)
query = st.text_input("Draw a query, its PtR stubs and both architectures' hits", key="map_q",
                      placeholder="e.g. Find hotels in Paris and convert 200 EUR to USD")
k = int(state.get("k_default", 5))
overlay = None
if query.strip():
    try:
        overlay = map_overlay(inspect_live(query, k, retriever, settings), retriever, projection)
    except QueryError as exc:
        st.warning(md(exc, 300))
    except Exception as exc:  # noqa: BLE001 - an LLM failure leaves the map itself usable
        error(f"Could not place the query: {exc}", settings)
st.plotly_chart(figures.embedding_map(background, overlay), width="stretch")
st.caption(f"PCA of {len(background):,} sampled registry vectors (explained variance "
           f"{projection.explained[0]:.1%} + {projection.explained[1]:.1%}); distances on a 2-D projection only "
           f"hint at cosine similarity. k = {k}.")
if isinstance(overlay, pd.DataFrame):
    st.dataframe(overlay, hide_index=True, width="stretch")
