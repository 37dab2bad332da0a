"""The leaderboard, as MTEB and BFCL show one: a row per system and architecture, a column per subset, intervals
and provenance; sortable by any column, downloadable, on the Overview and the Results pages."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis import paper
from core.analysis.reader import ResultsReader
from core.analysis.subset_gains import subset_gains
from core.analysis.tables import LEADERBOARD_NOTE
from core.data.toolbench import subset_order
from core.settings import Settings
from ui.figures import RELEVANT_WARNING
from ui.tables import MEAN_COLUMN, leaderboard_view
from ui.widgets import download_buttons, safe_read

METRICS = {"recall": "recall@5", "precision": "precision@5"}


def leaderboard_board(settings: Settings, gold: str) -> pd.DataFrame | None:
    """Every backend's latest study with intervals, then the paper's rows; None when unreadable."""
    ours = safe_read(settings, ResultsReader.leaderboard, gold=gold)
    if not isinstance(ours, pd.DataFrame):
        return None
    return pd.concat([ours, paper.leaderboard_rows(paper.load_paper(settings.root / "data" / "paper_reference.json"))],
                     ignore_index=True)


def gains_table(settings: Settings, gold: str) -> pd.DataFrame | None:
    """PtR - RtP recall per subset for every backend's latest study at its own k, named as the leaderboard names
    it, then the paper's (core.analysis.subset_gains); None when unreadable. The intervals are the paired tests'."""
    backends = safe_read(settings, ResultsReader.backends)
    if backends is None:
        return None
    paired = {}
    for backend in backends:
        setup = safe_read(settings, ResultsReader.setup, backend=backend) or {}
        tests = safe_read(settings, ResultsReader.paired_tests, gold=gold, k=int(setup.get("k") or 5), backend=backend)
        if tests is None:
            return None
        paired[setup.get("backend_label", backend)] = tests
    return subset_gains(paired, paper.load_paper(settings.root / "data" / "paper_reference.json"))


def leaderboard(settings: Settings, gold: str, key: str) -> pd.DataFrame | None:
    """Renders the leaderboard with its metric picker (bound to the URL as ?<key>=) and downloads; returns the
    long board (one row per system, architecture and subset) for charts."""
    board = leaderboard_board(settings, gold)
    if board is None or board.empty:
        st.info("No complete main study yet: run `python -m core bench main`.")
        return board
    metric = st.radio("Leaderboard metric", list(METRICS), horizontal=True, key=key, help="at k = 5",
                      bind="query-params")
    view = leaderboard_view(board, metric)
    subsets = subset_order(board["subset"])
    config = {s: st.column_config.NumberColumn(s, format="%.3f") for s in subsets}
    config[MEAN_COLUMN] = st.column_config.NumberColumn(MEAN_COLUMN, format="%.3f",
                                                        help="Mean over G1/G2/G3_instruction, the paper's subsets")
    config["system"] = st.column_config.TextColumn("system", pinned=True)
    st.dataframe(view, hide_index=True, width="stretch", column_config=config)
    st.caption(f"{METRICS[metric]} per subset, gold = {gold}; click a header to sort. {LEADERBOARD_NOTE}"
               + (f" ⚠ {RELEVANT_WARNING}." if gold == "relevant" else ""))
    download_buttons(view, f"leaderboard_{metric}_{gold}", {"gold": gold, "k": 5, "metric": metric,
                                                             "sources": "each row's provenance columns"})
    return board
