"""Registry: search the APIs by words or by meaning, see the categories, and draw a query's neighbourhood on a map.

Every control is bound to the URL (?reg_tab=, ?reg_search=, ?reg_mode=, ?reg_doc=, ?reg_cat=, ?q=), so a search
is a link. The Import tab turns an uploaded spec or tool list into a registry of its own (ui.registry_import).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.data.loaders import query_set_for
from core.data.query_sets import summary
from core.data.registry import UNKNOWN_CATEGORY
from core.retrieval.discovery import QueryError, clean_query
from core.settings import DataNotFoundError
from ui import figures, tables
from ui.page_settings import current_settings
from ui.registry_import import import_form, registry_facts
from ui.registry_views import map_overlay, registry_frame, registry_map
from ui.resources import inspect_live
from ui.safe import md
from ui.widgets import error, index_gate, quiet_retriever

SHOWN_ROWS = 500  # a search for "a" would otherwise ship 47k rows to the browser
SEMANTIC_TOP = 100
DOC_SOURCES = {"full": "described (ToolBench documentation)", "name_only": "name only (no description)"}
MODES = {"words": "substring", "meaning": "the index, as RtP ranks"}

settings = current_settings()
st.title("Registry")
st.markdown(registry_facts(settings))
try:
    frame = registry_frame(settings)
    query_set = query_set_for(settings)
except DataNotFoundError as exc:
    error(exc)
    st.stop()
if query_set is not None:
    with st.expander(f"Its {len(query_set.queries):,} test queries and their gold names"):
        st.code(summary(query_set), language=None)


def search_tab() -> None:
    """Words or meaning, filtered by document source and category; at most SHOWN_ROWS rows reach the browser."""
    line = st.columns([3, 2])
    text = line[0].text_input("Search tool, API name or description", key="reg_search", bind="query-params",
                              placeholder="e.g. weather, currency, instagram")
    mode = line[1].radio("Match by", list(MODES), captions=list(MODES.values()), key="reg_mode", horizontal=True,
                         bind="query-params")
    picks = st.columns([1, 2])
    doc_sources = picks[0].multiselect("Document", list(DOC_SOURCES), key="reg_doc", placeholder="full and name_only",
                                       bind="query-params", help="; ".join(f"{k}: {v}" for k, v in DOC_SOURCES.items()))
    category_names = sorted(frame["category"].unique(), key=lambda c: (c == UNKNOWN_CATEGORY, c))
    chosen = picks[1].multiselect("Category", category_names, key="reg_cat", placeholder="every category",
                                  bind="query-params")
    found: pd.DataFrame | None = None
    if mode == "meaning" and text.strip():
        retriever = quiet_retriever(settings)
        if retriever is None:
            st.info("The index is still loading (see the sidebar); searching by words meanwhile.")
        else:
            try:
                vector = retriever.encode([clean_query(text)])[0]
                scores, rows = retriever.index.search(vector, SEMANTIC_TOP)
                found = tables.semantic_hits(frame, rows.tolist(), scores.tolist(), doc_sources, chosen)
                st.caption(f"The {SEMANTIC_TOP} APIs closest in meaning (cosine, as RtP ranks the raw query), "
                           f"{len(found)} after the filters.")
            except QueryError as exc:
                st.warning(md(exc, 300))
    if found is None:
        found = tables.search_registry(frame, text, doc_sources, chosen)
        st.caption(f"{len(found):,} of {len(frame):,} APIs ({md(settings.registry)} registry; described APIs "
                   "first)" + (f"; showing the first {SHOWN_ROWS}" if len(found) > SHOWN_ROWS else ""))
    st.dataframe(found.head(SHOWN_ROWS), hide_index=True, width="stretch",
                 column_config={"description": st.column_config.TextColumn("description", width="large"),
                                "cosine": st.column_config.NumberColumn("cosine", format="%.3f")})


def categories_tab() -> None:
    """APIs per category."""
    counts = frame["category"].value_counts().rename_axis("category").reset_index(name="apis")
    chart, table = st.columns([3, 2])
    chart.plotly_chart(figures.category_bars(counts), width="stretch")
    table.dataframe(counts, hide_index=True, width="stretch")
    unknown = int(counts.loc[counts["category"] == UNKNOWN_CATEGORY, "apis"].sum())
    table.caption(f"{len(counts):,} categories; {unknown:,} APIs without one count as {UNKNOWN_CATEGORY}.")


# Only the open tab runs (?reg_tab= names it), so a first visit does not also build the other tab's chart.
for tab, render in zip(st.tabs(["Search", "Categories", "Import"], key="reg_tab", bind="query-params"),
                       (search_tab, categories_tab, lambda: import_form(settings))):
    if tab.open:
        with tab:
            render()

st.subheader("The embedding space")
retriever = index_gate(settings)
if retriever is None:
    st.stop()
projection, background = registry_map(retriever)
query = st.text_input("Draw a query, its PtR stubs and both architectures' hits", key="q", bind="query-params",
                      placeholder="e.g. Find hotels in Paris and convert 200 EUR to USD")
k = int(st.session_state.get("k_default", 5))
overlay = None
if query.strip():
    try:
        overlay = map_overlay(inspect_live(query, k, retriever, settings), retriever, projection)
    except QueryError as exc:
        st.warning(md(exc, 300))
    except Exception as exc:  # an LLM failure leaves the map itself usable
        error(f"Could not place the query: {exc}", settings)
st.plotly_chart(figures.embedding_map(background, overlay), width="stretch")
st.caption(f"PCA of {len(background):,} sampled registry vectors, coloured by category (the largest "
           f"{figures.MAP_CATEGORIES}; the rest grey). The two components explain {projection.explained[0]:.1%} + "
           f"{projection.explained[1]:.1%} of the variance: 384 dimensions do not flatten well, so closeness on this "
           f"map only hints at cosine similarity; the query's own neighbours are the hits listed below. k = {k}.")
if isinstance(overlay, pd.DataFrame):
    st.dataframe(overlay, hide_index=True, width="stretch")
