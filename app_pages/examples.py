"""Examples: browse the study's wins and losses query by query, or compare any two stored systems query by query;
any row opens in the Inspector."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis.provenance import provenance, provenance_line
from core.analysis.reader import ResultsReader
from core.data.loaders import queries_for
from core.settings import DataNotFoundError
from core.data.toolbench import subset_order
from ui import tables
from ui.figures import OUTCOME_NAMES
from ui.compare_view import compare_systems_view
from ui.page_settings import chosen_study, current_settings
from ui.resources import stored_studies
from ui.safe import md
from ui.widgets import download_buttons, results_ready, safe_read

settings = current_settings()
gold = st.session_state.get("gold", "api_list")
st.title("Examples")
if not results_ready(settings):
    st.stop()

VIEWS = ("Wins and losses", "Two systems")
view = st.segmented_control("View", VIEWS, default=VIEWS[0], key="ex_view", bind="query-params",
                            label_visibility="collapsed")
try:
    texts = {(q.subset, q.query_id): q.query for q in queries_for(settings)}
except DataNotFoundError as exc:  # the message names the registry's data and how to restore it
    texts = {}
    st.caption(f"Query texts are not shown: {md(str(exc), 300)}")
if view == VIEWS[1]:
    studies = stored_studies(settings)
    compare_systems_view(settings, studies, gold, texts, subset_order({s for s, _ in texts}) if texts else [])
    st.stop()

study = chosen_study()
setup = safe_read(settings, ResultsReader.setup, backend=study) or {}
sweep = safe_read(settings, ResultsReader.ksweep, gold=gold, backend=study)
ks = sorted({int(setup.get("k", 5)), *(sweep["k"].astype(int).tolist() if isinstance(sweep, pd.DataFrame) else [])})
top = st.columns([1, 2, 2, 2])
k = top[0].selectbox("k", ks, index=ks.index(int(setup.get("k", 5))), key="ex_k", bind="query-params")
per_query = safe_read(settings, ResultsReader.per_query, None, gold=gold, k=k, backend=study)
if per_query is None or per_query.empty:
    st.info(f"No per-query results at k = {k} yet.")
    st.stop()
# Every filter is bound to the URL (?ex_subset=…&ex_outcome=…&ex_text=…&ex_diff=…): a filtered view is a link.
subsets = top[1].multiselect("Subset", subset_order(per_query["subset"]), placeholder="all subsets",
                             key="ex_subset", bind="query-params")
outcomes = top[2].multiselect("Outcome", list(OUTCOME_NAMES), placeholder="any outcome", key="ex_outcome",
                              bind="query-params", help="rtp_wins, ptr_wins: higher recall; tie; both_miss: both 0")
text = top[3].text_input("Text in query or stubs", placeholder="e.g. weather", key="ex_text", bind="query-params")
diff = st.slider("Recall difference (PtR − RtP)", -1.0, 1.0, (-1.0, 1.0), step=0.05, key="ex_diff",
                 bind="query-params")

rows = tables.filter_examples(tables.join_queries(per_query, texts), subsets, outcomes, diff, text)
rows = rows.assign(inspect=tables.inspector_links(rows, k), outcome=rows["outcome"].map(OUTCOME_NAMES))
st.caption(f"{len(rows):,} of {len(per_query):,} queries · {md(provenance_line(provenance(setup, gold, k)), 300)} · "
           "select a row to open it in the Inspector, or use its link; the URL keeps these filters.")
picked = st.dataframe(
    rows, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row", key="examples_table",
    column_order=["subset", "query_id", "inspect", "query", "outcome", "rtp_recall", "ptr_recall", "recall_diff",
                  "rtp_top1", "n_stubs", "stub_names"],
    column_config={
        "query": st.column_config.TextColumn("query", width="large"),
        "rtp_recall": st.column_config.NumberColumn("RtP recall", format="%.2f"),
        "ptr_recall": st.column_config.NumberColumn("PtR recall", format="%.2f"),
        "recall_diff": st.column_config.NumberColumn("PtR − RtP", format="%+.2f"),
        "rtp_top1": st.column_config.NumberColumn("RtP top-1 cos", format="%.3f"),
        "n_stubs": st.column_config.NumberColumn("stubs", format="%d"),
        "inspect": st.column_config.LinkColumn("open", display_text="Inspector ↗"),
    })
download_buttons(rows.drop(columns=["inspect"]), f"examples_{gold}_k{k}", provenance(setup, gold, k))

selected = picked.selection.rows if picked else []
if selected:
    row = rows.iloc[selected[0]]
    st.switch_page("app_pages/inspector.py",
                   query_params={"qid": f"{row['subset']}:{int(row['query_id'])}", "k": str(k)})
