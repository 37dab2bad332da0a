"""Examples' second view: any two stored systems and architectures compared query by query (core.analysis.compare).

The pickers are bound to the URL, so a comparison is a link; every row opens its query in the Inspector's
side-by-side view; the download carries both sides' provenance.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis.compare import COMPARABLE_ARCHS, Side, flat_provenance, summarise
from core.analysis.reader import ResultsReader
from core.retrieval.archs import arch
from ui import tables
from ui.safe import md
from ui.widgets import download_buttons, safe_read

OUTCOME_TEXT = {"a_wins": "A wins", "b_wins": "B wins", "tie": "tie", "both_miss": "both miss"}


def _fmt(value: float | None, sign: bool = False) -> str:
    if value is None or pd.isna(value):
        return "–"
    return f"{value:+.3f}" if sign else f"{value:.3f}"


def side_picker(column: st.delta_generator.DeltaGenerator, name: str, labels: dict[str, str], default: str,
                default_arch: str) -> tuple[str, str]:
    """(system, arch) of one side: the study by its model's label (bound: ?cmp_a=…&cmp_a_arch=…)."""
    names = list(labels)
    system_label = column.selectbox(f"System {name}", names, index=names.index(default), key=f"cmp_{name.lower()}",
                                    bind="query-params")
    archs = [arch(a).label for a in COMPARABLE_ARCHS]
    chosen = column.radio(f"Architecture {name}", archs, index=archs.index(arch(default_arch).label), horizontal=True,
                          key=f"cmp_{name.lower()}_arch", bind="query-params")
    return labels[system_label], COMPARABLE_ARCHS[archs.index(chosen)]


def compare_systems_view(settings, studies: list[str], gold: str, texts: dict[tuple[str, int], str],
                         subsets: list[str]) -> None:
    """The two pickers, the counts and interval, and the queries by difference."""
    reader_setup = {system: safe_read(settings, ResultsReader.setup, system) or {} for system in studies}
    labels = {Side.of(system, "rtp", reader_setup[system]).system_label or system: system for system in studies}
    if len(labels) < 1:
        st.info("No stored study to compare.")
        return
    by_system = {system: label for label, system in labels.items()}
    largest = next((s for s in reversed(studies) if s != "offline"), studies[0])
    left, right = st.columns(2)
    system_a, arch_a = side_picker(left, "A", labels, by_system[largest], "ptr")
    system_b, arch_b = side_picker(right, "B", labels, by_system[largest], "rtp")
    subset = st.selectbox("Subset", ["all", *subsets], key="cmp_subset", bind="query-params")
    a, b = Side.of(system_a, arch_a, reader_setup[system_a]), Side.of(system_b, arch_b, reader_setup[system_b])
    chosen_subset = None if subset == "all" else subset
    rows = safe_read(settings, ResultsReader.compare_systems, a, b, chosen_subset, gold)
    if rows is None:
        return
    if rows.empty:
        st.info("These two sides share no stored query in this selection (a model's study covers a sample of "
                "queries: pick another subset or system).", icon=":material/filter_alt_off:")
        return
    summary = summarise(rows)
    st.markdown(f"**A** = {md(a.label, 80)} · **B** = {md(b.label, 80)} · {summary.n:,} queries both hold · "
                f"gold {md(gold)}")
    counts = st.columns(4)
    for cell, (label, value) in zip(counts, (("A wins", summary.a_wins), ("B wins", summary.b_wins),
                                             ("ties", summary.ties), ("both miss", summary.both_miss))):
        cell.metric(label, f"{value:,}")
    st.markdown(f"Recall: A **{_fmt(summary.a_mean)}**, B **{_fmt(summary.b_mean)}**; A − B "
                f"**{_fmt(summary.mean_diff, True)}** [95% CI {_fmt(summary.low, True)}, {_fmt(summary.high, True)}] "
                "(paired bootstrap over the same queries, as the report's)")
    shown = tables.join_queries(rows, texts)
    shown = shown.assign(outcome=shown["outcome"].map(OUTCOME_TEXT),
                         inspect=[f"{link}&show=Every+system" for link in
                                  tables.inspector_links(shown, int(reader_setup[system_a].get("k") or 5))])
    st.dataframe(shown, hide_index=True, width="stretch",
                 column_order=["subset", "query_id", "inspect", "query", "a_recall", "b_recall", "diff", "outcome"],
                 column_config={"query": st.column_config.TextColumn("query", width="large"),
                                "a_recall": st.column_config.NumberColumn("A recall", format="%.2f"),
                                "b_recall": st.column_config.NumberColumn("B recall", format="%.2f"),
                                "diff": st.column_config.NumberColumn("A − B", format="%+.2f"),
                                "inspect": st.column_config.LinkColumn("open", display_text="every system ↗")})
    source_a = safe_read(settings, ResultsReader.side_provenance, a.system, a.arch, gold, None, chosen_subset) or {}
    source_b = safe_read(settings, ResultsReader.side_provenance, b.system, b.arch, gold, None, chosen_subset) or {}
    download_buttons(shown.drop(columns=["inspect"]), f"compare_{a.arch}_{b.arch}_{gold}",
                     {"a": a.label, "b": b.label, **flat_provenance(source_a, source_b)})
