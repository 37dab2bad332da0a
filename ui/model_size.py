"""The model-size answer (core.analysis.model_size) as one chart and one table, on the Overview and on Results."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis import paper
from core.analysis.model_size import NOTE, model_size_table
from core.analysis.reader import ResultsReader
from core.data.loaders import queries_for
from core.settings import DataNotFoundError, Settings
from ui import figures
from ui.resources import db_figure, db_version, results
from ui.widgets import download_buttons, error

SHOWN = {"model": "model", "parameters": "parameters", "subset": "subset", "n": "n",
         "ptr_minus_rtp": "PtR − RtP", "ptr_low": "low", "ptr_high": "high",
         "hybrid_minus_rtp": "hybrid − RtP", "hybrid_low": "hybrid low", "hybrid_high": "hybrid high",
         "stubs_per_query": "stubs / query", "unique_name_rate": "unique names", "top1_match_rate": "top-1 match",
         "cosine_correct": "cos correct", "cosine_incorrect": "cos incorrect", "stub_copy_rate": "stub copy rate",
         "plan_copy_rate": "plan copy rate", "planned_queries": "planned (sample)"}


@st.cache_resource(show_spinner=False, max_entries=8)
def _table(url: str, version: tuple[int, ...], gold: str, copy_rates: bool, _settings: Settings,
           _reader: ResultsReader) -> pd.DataFrame:
    """The table; the copy rates (which parse every stored reply: 1-2 s) only when asked for."""
    try:
        texts = {(q.subset, q.query_id): q.query for q in queries_for(_settings)} if copy_rates else {}
    except DataNotFoundError:
        texts = {}  # no copy rate without the queries' texts; every other column reads the store only
    return model_size_table(_reader, paper.load_paper(_settings.root / "data" / "paper_reference.json"), texts, gold)


def model_size_frame(settings: Settings, gold: str, copy_rates: bool = True) -> pd.DataFrame | None:
    try:
        return _table(settings.results_url, db_version(settings), gold, copy_rates, settings, results(settings)).copy()
    except Exception as exc:
        error(f"Reading the model-size table failed: {exc}", settings)
        return None


def model_size(settings: Settings, gold: str, compact: bool = False) -> None:
    """The chart, then the table (the Overview shows the differences only; Results every column) and downloads."""
    table = model_size_frame(settings, gold, copy_rates=not compact)
    if table is None:
        return
    st.plotly_chart(db_figure(settings, ("model_size", gold, compact), lambda: figures.model_size(table)),
                    width="stretch")
    columns = (["model", "parameters", "subset", "n", "ptr_minus_rtp", "ptr_low", "ptr_high", "hybrid_minus_rtp",
                "hybrid_low", "hybrid_high"] if compact else list(SHOWN))
    view = table[columns].rename(columns=SHOWN)
    number = {SHOWN[c]: st.column_config.NumberColumn(SHOWN[c], format="%.3f") for c in columns
              if c not in ("model", "parameters", "subset", "n", "planned_queries")}
    st.dataframe(view, hide_index=True, width="stretch", column_config=number)
    st.caption(f"gold = {gold}. {NOTE}")
    download_buttons(table, f"model_size_{gold}", {"gold": gold, "k": 5, "sources": "each model's latest main and "
                                                   "hybrid study; the paper's reported figures"})
