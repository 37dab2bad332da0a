"""Plotly figure builders: pure functions from DataFrames to go.Figure, testable without Streamlit.

Ours are filled markers or bars, the paper's open markers or hatched bars, in the same colour per architecture,
so each chart reads as "ours vs paper" at a glance. Subsets are categories, not a sequence: a chart over subsets
draws bars or markers, never a line from one subset to the next; only sequences (k, registry size, a threshold, a
coupling) are lines. Every legend sits at the bottom of its figure, where no title or subtitle can reach it
(_layout).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.retrieval.archs import ARCH_LIST, ARCHS, PAPER_ARCHS
from core.data.toolbench import subset_order
from core.analysis.paper import PAPER_LABEL
from core.embedding_models import retriever_label
from ui.chart_text import wrap
from ui.safe import plot_text

ARCH_COLORS = {a.name: a.colour for a in ARCH_LIST}
ARCH_NAMES = {a.name: a.legend for a in ARCH_LIST}
OUTCOME_COLORS = {"rtp_wins": ARCH_COLORS["rtp"], "ptr_wins": ARCH_COLORS["ptr"], "tie": "#7f7f7f",
                  "both_miss": "#bcbd22"}
OUTCOME_NAMES = {"rtp_wins": "RtP wins", "ptr_wins": "PtR wins", "tie": "tie", "both_miss": "both miss"}
MAP_MARKERS = {"query": ("star", 18, "#111111"), "stub": ("diamond", 13, "#ff7f0e"),
               **{a.name: (a.map_marker, 14, a.colour) for a in ARCH_LIST if a.map_marker}}
MAP_NAMES = {"query": "query", "stub": "PtR stub", **{a.name: f"{a.label} hit" for a in ARCH_LIST if a.map_marker}}


PANEL_TITLE_CHARS = 30  # what a panel title holds in a two-panel row of a 540 px chart (a 1,000 px window)
LINE_PX = 20  # one line of a panel title or of an annotation above the plot
LEGEND = {"orientation": "h", "xref": "container", "x": 0, "xanchor": "left", "yref": "container", "y": 0,
          "yanchor": "bottom"}


def _layout(fig: go.Figure, title: str, height: int = 420, above_plot: int = 0) -> go.Figure:
    """The title and the subtitle db_figure adds at the top, pushing the plot down as far as they need, with
    `above_plot` px kept free under them for panel titles or notes that sit right above the plot; the legend at
    the bottom of the figure, in rows plotly reserves below the axes. A legend between title and plot grew into
    the subtitle when a narrow chart wrapped it onto more rows; from the bottom it cannot reach the title at
    any width. The title stays one short line: plotly lifts a two-line title's first line out of a subtitled
    figure."""
    fig.update_layout(title={"text": title, "x": 0.01, "xanchor": "left", "xref": "container",
                             "y": 1, "yanchor": "top", "yref": "container", "automargin": True,
                             "pad": {"t": 10, "b": above_plot}},
                      height=height, margin={"l": 50, "r": 20, "t": 30, "b": 20}, legend=LEGEND,
                      hovermode="closest", template="plotly_white")
    return fig


def empty(title: str, message: str) -> go.Figure:
    """A blank chart that says why it is blank, so a missing experiment never looks like a bug."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font={"size": 14, "color": "#666"})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, title, 300)


RELEVANT_WARNING = ("gold = relevant: the paper's ground truth behaves like api_list (about 5–6 APIs per query), "
                    "so compare shapes here, not levels")


def ours_name(arch: str, system: str | None) -> str:
    """A legend entry of ours that names the system, e.g. "PtR (ours: offline heuristic, not an LLM)"."""
    return plot_text(f"{ARCH_NAMES[arch]} (ours{': ' + system if system else ''})", 90)


def crossover(main: pd.DataFrame, paper: pd.DataFrame, metric: str = "recall", k: int = 5, system: str | None = None,
              gold: str = "api_list") -> go.Figure:
    """metric@k by subset for both architectures as markers, error bars = std over runs, each with the paper's open
    marker on the same spot where it reports one: subsets are categories, so no line joins them. `system` names our
    backend in the legend.

    `main` has ResultsReader.main_table's columns; `paper` has core.analysis.paper.main_points' columns.
    """
    title = f"{metric}@{k} by subset: RtP and PtR beside the paper's"
    ours = main[main["metric"] == metric] if len(main) else main
    if ours.empty:
        return empty(title, "No main-comparison results yet: run `python -m core bench main`.")
    order = subset_order(ours["subset"])
    ours = ours.set_index("subset").loc[order].reset_index()
    fig = go.Figure()
    for arch in PAPER_ARCHS:
        fig.add_trace(go.Scatter(
            x=ours["subset"], y=ours[f"{arch}_mean"], name=ours_name(arch, system), mode="markers", offsetgroup=arch,
            marker={"color": ARCH_COLORS[arch], "size": 12},
            error_y={"type": "data", "array": ours[f"{arch}_std"].fillna(0.0), "visible": True},
            hovertemplate="%{x}<br>" + ARCH_NAMES[arch] + " %{y:.3f} ± %{error_y.array:.3f}<extra></extra>"))
    theirs = paper[(paper["metric"] == metric) & paper["subset"].isin(order)] if len(paper) else paper
    for arch in PAPER_ARCHS:
        points = theirs[theirs["arch"] == arch] if len(theirs) else theirs
        if len(points):
            points = points.set_index("subset").loc[[s for s in order if s in set(points["subset"])]].reset_index()
            fig.add_trace(go.Scatter(
                x=points["subset"], y=points["mean"], name=f"{ARCH_NAMES[arch]} ({PAPER_LABEL})",
                mode="markers", offsetgroup=arch, marker={"color": ARCH_COLORS[arch], "size": 16,
                                                          "symbol": "diamond-open", "line": {"width": 2}},
                error_y={"type": "data", "array": points["std"].fillna(0.0), "visible": True},
                hovertemplate="%{x}<br>paper " + ARCH_NAMES[arch] + " %{y:.3f}<extra></extra>"))
    fig.update_layout(scattermode="group", scattergap=0.5)  # RtP left, PtR right of each subset; ours and paper's alike
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order, title=None)
    fig.update_yaxes(title=f"{metric}@{k}", rangemode="tozero")
    if gold == "relevant" and len(theirs):
        _warn(fig, RELEVANT_WARNING)
    return _layout(fig, title, 460)


def _warn(fig: go.Figure, text: str) -> None:
    """A warning as the x axis's title: plotly keeps room for an axis title, so it meets neither the tick labels
    nor the legend under them, as a note placed below the plot did."""
    fig.update_xaxes(title={"text": wrap("⚠ " + text, 80), "font": {"size": 12, "color": "#9a6700"}})


SYSTEM_SYMBOLS = ("circle", "square", "diamond-open", "triangle-up", "x")


def crossover_backends(board: pd.DataFrame, metric: str = "recall", k: int = 5) -> go.Figure:
    """metric@k by subset for every system of the leaderboard as markers: colour = architecture, symbol = system,
    each system in its own slot of a subset (no line joins subsets: they are categories)."""
    title = f"{metric}@{k} by subset, every backend"
    if board.empty:
        return empty(title, "No main-comparison results yet: run `python -m core bench main`.")
    order = subset_order(board["subset"])
    fig = go.Figure()
    for i, system in enumerate(dict.fromkeys(board["system"])):
        for arch in ARCHS:
            part = board[(board["system"] == system) & (board["arch"] == arch)].dropna(subset=[metric])
            if part.empty:
                continue
            part = part.set_index("subset").loc[[s for s in order if s in set(part["subset"])]].reset_index()
            fig.add_trace(go.Scatter(
                x=part["subset"], y=part[metric], name=plot_text(f"{ARCH_NAMES[arch]} · {system}", 70),
                mode="markers", offsetgroup=system, marker={
                    "color": ARCH_COLORS[arch], "symbol": SYSTEM_SYMBOLS[i % len(SYSTEM_SYMBOLS)], "size": 10},
                customdata=part["n"], hovertemplate="%{x}<br>" + plot_text(system, 60) + " · " + ARCH_NAMES[arch]
                + " %{y:.3f} (n %{customdata})<extra></extra>"))
    fig.update_layout(scattermode="group", scattergap=0.3)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order, title=None)
    fig.update_yaxes(title=f"{metric}@{k}", rangemode="tozero")
    # One legend entry per system and architecture, about two to a row in a narrow chart: the figure grows by
    # those rows, so that the plot keeps its height under them.
    return _layout(fig, title, height=420 + 20 * math.ceil(len(fig.data) / 2))


SYSTEM_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d", "#eeca3b")
PAPER_BAR = {"color": "#e0e0e0", "line": {"color": "#555555", "width": 1.5},
             "pattern": {"shape": "/", "fgcolor": "#555555"}}


def subset_gains(table: pd.DataFrame, k: int = 5, gold: str = "api_list") -> go.Figure:
    """The Overview's headline: PtR - RtP recall@k per subset as grouped bars, a colour per discovery system with its
    paired bootstrap 95% interval, and the paper's Gemini 2.5 Flash as hatched grey bars (reported means: no
    interval). Above the zero line PtR found more of the gold; a system with no study of a subset has no bar there.

    `table` has core.analysis.subset_gains.COLUMNS.
    """
    title = f"PtR − RtP recall@{k} per subset, every system and the paper"
    if table.empty:
        return empty(title, "No main-comparison results yet: run `python -m core bench main`.")
    fig = go.Figure()
    for i, system in enumerate(dict.fromkeys(table["system"])):
        part = table[table["system"] == system]
        reported = bool((part["source"] == "paper").all())
        name = plot_text(system, 60)
        fig.add_trace(go.Bar(
            x=part["subset"].tolist(), y=part["diff"].tolist(), name=name,
            marker=PAPER_BAR if reported else {"color": SYSTEM_COLORS[i % len(SYSTEM_COLORS)]},
            error_y={"type": "data", "symmetric": False, "visible": not reported, "color": "#333", "thickness": 1.5,
                     "array": (part["high"] - part["diff"]).fillna(0.0).tolist(),
                     "arrayminus": (part["diff"] - part["low"]).fillna(0.0).tolist()},
            customdata=part[["n", "low", "high"]].to_numpy(dtype=object),
            hovertemplate=name + "<br>%{x}: PtR − RtP %{y:+.3f} " + (
                "(reported means, no interval)" if reported else "[%{customdata[1]:+.3f}, %{customdata[2]:+.3f}]")
            + ", n %{customdata[0]}<extra></extra>"))
    fig.add_hline(y=0, line={"color": "#444", "width": 1.5})
    fig.update_layout(barmode="group", bargap=0.2, bargroupgap=0.05)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=subset_order(table["subset"]), title=None)
    fig.update_yaxes(title=f"PtR − RtP recall@{k} (above 0: PtR better)", zeroline=False)
    if gold == "relevant" and (table["source"] == "paper").any():
        _warn(fig, RELEVANT_WARNING)
    return _layout(fig, title, 480)


def _grid(n: int, per_row: int = 3) -> tuple[int, int]:
    cols = min(n, per_row)
    return math.ceil(n / cols), cols


def ksweep(df: pd.DataFrame, paper: pd.DataFrame, metric: str = "recall", system: str | None = None) -> go.Figure:
    """metric vs k per subset (one panel each), both architectures, with the paper's stated points."""
    title = f"{metric} vs k"
    if df.empty:
        return empty(title, "No k-sweep results yet: run `python -m core bench ksweep`.")
    order = subset_order(df["subset"])
    rows, cols = _grid(len(order))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=order, shared_yaxes=True)
    for i, subset in enumerate(order):
        r, c = divmod(i, cols)
        for arch in PAPER_ARCHS:
            part = df[(df["subset"] == subset) & (df["arch"] == arch)].sort_values("k")
            if len(part):
                fig.add_trace(go.Scatter(
                    x=part["k"], y=part[f"{metric}_mean"], name=ours_name(arch, system), legendgroup=arch,
                    showlegend=i == 0, mode="lines+markers", line={"color": ARCH_COLORS[arch]},
                    error_y={"type": "data", "array": part[f"{metric}_std"].fillna(0.0), "visible": True},
                    hovertemplate=subset + " k=%{x}<br>" + ARCH_NAMES[arch] + " %{y:.3f}<extra></extra>"),
                    row=r + 1, col=c + 1)
            if metric == "recall" and len(paper):
                points = paper[(paper["subset"] == subset) & (paper["arch"] == arch)]
                if len(points):
                    fig.add_trace(go.Scatter(
                        x=points["k"], y=points["recall"], name=f"{ARCH_NAMES[arch]} (paper)",
                        legendgroup=f"paper-{arch}", showlegend=bool(subset == "G1_instruction"), mode="markers",
                        marker={"color": ARCH_COLORS[arch], "size": 12, "symbol": "diamond-open"},
                        hovertemplate=subset + " k=%{x}<br>paper " + ARCH_NAMES[arch] + " %{y:.3f}<extra></extra>"),
                        row=r + 1, col=c + 1)
    fig.update_xaxes(title="k", type="log", tickvals=[1, 2, 3, 5, 10, 20])
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, title, 200 + 300 * rows, above_plot=LINE_PX)


SUBSET_COLORS = ("#444444", "#e377c2", "#17becf", "#8c564b", "#bcbd22", "#7f7f7f")


def _size_text(size: int) -> str:
    """Registry sizes as axis ticks: 1,000 -> "1k", 47,038 -> "47k", 1,000,000 -> "1M"."""
    if size >= 1_000_000:
        return f"{size / 1_000_000:g}M"
    return f"{size / 1000:.0f}k" if size >= 1000 else str(size)


def scaling(df: pd.DataFrame, paper_divergence: pd.DataFrame) -> go.Figure:
    """Recall vs registry size (top) and how often the two architectures' top-k differ (bottom)."""
    title = "Registry size: recall and divergence"
    if df.empty:
        return empty(title, "No scaling results yet: run `python -m core bench scaling`.")
    order = subset_order(df["subset"])
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("recall (mean ± std over seeds and runs)",
                                        "divergence: share of queries whose top-k sets differ"))
    dashes = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
    for i, subset in enumerate(order):
        dash = dashes[i % len(dashes)]
        for arch in PAPER_ARCHS:
            part = df[(df["subset"] == subset) & (df["arch"] == arch)].sort_values("size")
            if len(part):
                fig.add_trace(go.Scatter(
                    x=part["size"], y=part["recall_mean"], name=f"{subset} {ARCH_NAMES[arch]}",
                    legendgroup=f"{subset}-{arch}", mode="lines+markers",
                    line={"color": ARCH_COLORS[arch], "dash": dash},
                    error_y={"type": "data", "array": part["recall_std"].fillna(0.0), "visible": True},
                    hovertemplate=(subset + " " + ARCH_NAMES[arch]
                                   + "<br>size %{x:,}<br>recall %{y:.3f}<extra></extra>")),
                    row=1, col=1)
        div = df[(df["subset"] == subset)].dropna(subset=["divergence_not_identical"]).drop_duplicates("size")
        if len(div):
            div = div.sort_values("size")
            fig.add_trace(go.Scatter(
                x=div["size"], y=div["divergence_not_identical"], name=f"{subset} divergence", mode="lines+markers",
                line={"color": SUBSET_COLORS[i % len(SUBSET_COLORS)], "dash": dash}, legendgroup=f"{subset}-div",
                hovertemplate=subset + "<br>size %{x:,}<br>not identical %{y:.2f}<extra></extra>"), row=2, col=1)
    if len(paper_divergence):
        fig.add_trace(go.Scatter(
            x=paper_divergence["size"], y=paper_divergence["divergence"], name="G1 divergence (paper)",
            mode="markers", marker={"symbol": "diamond-open", "size": 12, "color": "#111"},
            hovertemplate="paper G1<br>size %{x:,}<br>%{y:.2f}<extra></extra>"), row=2, col=1)
    sizes = sorted({int(v) for v in df["size"].dropna()} | {int(v) for v in paper_divergence.get("size", [])})
    ticks = {"tickvals": sizes, "ticktext": [_size_text(v) for v in sizes], "minor": {"showgrid": False}}
    fig.update_xaxes(type="log", **ticks)
    fig.update_xaxes(title="registry size (APIs)", row=2, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(range=[0, 1.05], row=2, col=1)
    return _layout(fig, title, 720, above_plot=LINE_PX)


def distractor_scale(real: pd.DataFrame, far: pd.DataFrame, paper_divergence: pd.DataFrame) -> go.Figure:
    """The scaling curve continued past the real registry: real sub-registries (solid, filled) up to it, then the
    real registry plus SYNTHETIC distractors (dashed, open markers, shaded), recall on top and divergence below,
    beside the paper's G1 divergence at 1k and 47k."""
    title = "Distractor scale: SYNTHETIC distractors past the real registry"
    synthetic = far[far["synthetic_distractors"] > 0] if len(far) else far
    if synthetic.empty:
        return empty(title, "No distractor-scale runs for this setup: `python -m core bench distractors`<br>"
                            "(the committed ones reuse the offline heuristic's stubs: pick it under Runs of backend)")
    real_size = int(far.loc[far["synthetic_distractors"] == 0, "size"].max()
                    if (far["synthetic_distractors"] == 0).any() else synthetic["size"].min())
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("recall (mean ± std over seeds or distractor draws)",
                                        "divergence: share of queries whose top-k sets differ"))
    dashes = ["solid", "dash", "dashdot"]  # per subset for real sizes; "dot" marks the synthetic ones
    for i, subset in enumerate(subset_order(synthetic["subset"])):
        mine = far[far["subset"] == subset]
        ours = real[(real["subset"] == subset) & (real["size"] <= real_size)] if len(real) else real
        for arch in PAPER_ARCHS:
            for part, kind, symbol, line_dash in (
                    (ours[ours["arch"] == arch] if len(ours) else ours, "real sub-registries", "circle", dashes[i % 3]),
                    (mine[mine["arch"] == arch], "real + synthetic distractors", "circle-open", "dot")):
                part = part.sort_values("size")
                if part.empty:
                    continue
                fig.add_trace(go.Scatter(
                    x=part["size"], y=part["recall_mean"], name=f"{subset} {ARCH_NAMES[arch]}, {kind}",
                    mode="lines+markers", line={"color": ARCH_COLORS[arch], "dash": line_dash},
                    marker={"symbol": symbol, "size": 9},
                    error_y={"type": "data", "array": part["recall_std"].fillna(0.0), "visible": True},
                    hovertemplate=f"{subset} {ARCH_NAMES[arch]} ({kind})<br>size %{{x:,}}<br>recall %{{y:.3f}}"
                                  "<extra></extra>"), row=1, col=1)
        for part, kind, symbol, line_dash in ((ours, "real sub-registries", "circle", dashes[i % 3]),
                                              (mine, "real + synthetic distractors", "circle-open", "dot")):
            div = (part.dropna(subset=["divergence_not_identical"]).drop_duplicates("size").sort_values("size")
                   if len(part) else part)
            if len(div):
                fig.add_trace(go.Scatter(
                    x=div["size"], y=div["divergence_not_identical"], name=f"{subset} divergence, {kind}",
                    mode="lines+markers", line={"color": SUBSET_COLORS[i % len(SUBSET_COLORS)], "dash": line_dash},
                    marker={"symbol": symbol, "size": 9},
                    hovertemplate=f"{subset} ({kind})<br>size %{{x:,}}<br>not identical %{{y:.2f}}<extra></extra>"),
                    row=2, col=1)
    if len(paper_divergence):
        fig.add_trace(go.Scatter(
            x=paper_divergence["size"], y=paper_divergence["divergence"], name="G1 divergence (paper, 1k-47k)",
            mode="markers", marker={"symbol": "diamond-open", "size": 12, "color": "#111"},
            hovertemplate="paper G1<br>size %{x:,}<br>%{y:.2f}<extra></extra>"), row=2, col=1)
    top = int(synthetic["size"].max())
    for row in (1, 2):
        fig.add_vrect(x0=real_size, x1=top * 1.15, fillcolor="#999", opacity=0.12, line_width=0, row=row, col=1)
    fig.add_annotation(x=math.log10(math.sqrt(real_size * top)), y=1.0, yref="y domain", showarrow=False,
                       text="SYNTHETIC distractors", font={"color": "#555"}, row=1, col=1)
    sizes = sorted({int(v) for v in (real["size"] if len(real) else [])} | {int(v) for v in far["size"]})
    fig.update_xaxes(type="log", tickvals=sizes, ticktext=[_size_text(v) for v in sizes], minor={"showgrid": False})
    fig.update_xaxes(title="registry size (APIs; past the real registry: real + synthetic distractor vectors)",
                     row=2, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(range=[0, 1.05], row=2, col=1)
    return _layout(fig, title, 860, above_plot=LINE_PX)  # thirteen legend rows in a narrow chart


def per_query_scatter(df: pd.DataFrame, seed: int = 0) -> go.Figure:
    """RtP vs PtR recall per query, jittered (recalls take few values), coloured by outcome; each point's
    customdata ends with its query id ("subset:id"), which a click hands to the Inspector."""
    title = "Per-query recall: RtP vs PtR"
    if df.empty:
        return empty(title, "No per-query results for this choice.")
    rng = np.random.default_rng(seed)
    fig = go.Figure()
    for outcome, name in OUTCOME_NAMES.items():
        part = df[df["outcome"] == outcome]
        if part.empty:
            continue
        jitter = rng.uniform(-0.015, 0.015, size=(2, len(part)))
        labels = [plot_text(f"{s}:{q}") for s, q in zip(part["subset"], part["query_id"])]
        fig.add_trace(go.Scatter(
            x=part["rtp_recall"].to_numpy(dtype=float) + jitter[0],
            y=part["ptr_recall"].to_numpy(dtype=float) + jitter[1], mode="markers",
            name=f"{name} ({len(part)})", marker={"color": OUTCOME_COLORS[outcome], "size": 7, "opacity": 0.7},
            text=labels, customdata=np.stack([part["rtp_recall"].astype(float).round(3).astype(str),
                                              part["ptr_recall"].astype(float).round(3).astype(str),
                                              [f"{s}:{int(q)}" for s, q in zip(part["subset"], part["query_id"])]],
                                             axis=1),
            hovertemplate="%{text}<br>RtP %{customdata[0]} · PtR %{customdata[1]}<br>click to open in the "
                          "Inspector<extra></extra>"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"color": "#999", "dash": "dot"},
                             showlegend=False, hoverinfo="skip"))
    fig.update_xaxes(title="RtP recall", range=[-0.05, 1.05])
    fig.update_yaxes(title="PtR recall", range=[-0.05, 1.05])
    return _layout(fig, title, 520)


def token_cost(df: pd.DataFrame) -> go.Figure:
    """LLM tokens per query by subset: RtP's planner beside PtR's stub writing stacked on its planner.

    `df` has ResultsReader.cost()'s columns (means per query).
    """
    title = "LLM tokens per query"
    needed = {"subset", "rtp_tokens", "ptr_discovery_tokens", "ptr_planner_tokens"}
    if df.empty or not needed <= set(df.columns):
        return empty(title, "No token records yet.")
    if not df[sorted(needed - {"subset"})].fillna(0).to_numpy().any():
        return empty(title, "No LLM tokens were spent: these runs used the offline heuristic, not an LLM.")
    part = df.set_index("subset").loc[subset_order(df["subset"])].reset_index()
    fig = go.Figure([
        go.Bar(x=part["subset"], y=part["rtp_tokens"], name="RtP planner", offsetgroup="rtp",
               marker_color=ARCH_COLORS["rtp"]),
        go.Bar(x=part["subset"], y=part["ptr_planner_tokens"], name="PtR planner", offsetgroup="ptr",
               marker_color=ARCH_COLORS["ptr"]),
        go.Bar(x=part["subset"], y=part["ptr_discovery_tokens"], base=part["ptr_planner_tokens"],
               name="PtR stub writing", offsetgroup="ptr", marker_color="#ff9896"),
    ])
    fig.update_layout(barmode="group")
    fig.update_yaxes(title="tokens per query (mean)")
    return _layout(fig, title, 400)


def cosine_hist(df: pd.DataFrame, paper: pd.DataFrame) -> go.Figure:
    """Stub→top-1 cosine, correct (top-1 is gold) vs incorrect, with the paper's means as lines."""
    title = "Stub top-1 cosine: correct vs incorrect matches"
    if df.empty:
        return empty(title, "No stub records for this choice.")
    fig = go.Figure()
    for correct, name, color in ((True, "correct (top-1 is gold)", "#2ca02c"), (False, "incorrect", "#9467bd")):
        part = df[df["correct"].astype(bool) == correct]
        if len(part):
            fig.add_trace(go.Histogram(x=part["cosine"],
                                       name=f"{name} (n={len(part)}, mean {part['cosine'].mean():.3f})",
                                       marker_color=color, opacity=0.6, nbinsx=40))
    for row in paper.itertuples():
        fig.add_vline(x=row.cosine, line_dash="dot", line_color="#2ca02c" if row.correct else "#9467bd")
    if len(paper):  # the paper's two means are 0.002 apart: one label for both lines
        means = ", ".join(f"{'correct' if r.correct else 'incorrect'} {r.cosine:.3f}" for r in paper.itertuples())
        fig.add_annotation(x=paper["cosine"].max(), y=1, yref="paper", xanchor="left", yanchor="bottom",
                           showarrow=False, text=f"paper means: {means}", font={"size": 11, "color": "#555"})
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title="cosine of stub and its top-1 API")
    fig.update_yaxes(title="stubs")
    return _layout(fig, title, 400, above_plot=LINE_PX if len(paper) else 0)


def category_bars(counts: pd.DataFrame, top: int = 30) -> go.Figure:
    """Horizontal bars of the `top` largest categories ([category, apis])."""
    title = f"APIs per category (top {top})"
    if counts.empty:
        return empty(title, "No APIs.")
    part = counts.sort_values("apis", ascending=False).head(top).iloc[::-1]
    fig = go.Figure(go.Bar(x=part["apis"], y=[plot_text(c, 40) for c in part["category"]], orientation="h",
                           marker_color="#4c78a8", hovertemplate="%{y}: %{x:,} APIs<extra></extra>"))
    return _layout(fig, title, max(300, 18 * len(part) + 80))


MAP_CATEGORIES = 10
CATEGORY_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d",
                    "#eeca3b", "#79706e")


def embedding_map(background: pd.DataFrame, overlay: pd.DataFrame | None = None) -> go.Figure:
    """A 2-D PCA map: a sample of the registry coloured by its MAP_CATEGORIES largest categories (the rest
    and the uncategorised grey), and optionally a query, its stubs and both hit lists on top.

    background: [x, y, label, category]; overlay: [x, y, kind ∈ MAP_MARKERS, label].
    """
    title = "The registry's embedding space (PCA, 2 components)"
    fig = go.Figure()
    known = background[background["category"].fillna("") != ""]
    top = known["category"].value_counts().head(MAP_CATEGORIES).index.tolist()
    groups = [(c, background["category"] == c, CATEGORY_PALETTE[i]) for i, c in enumerate(top)]
    groups.append(("other or none", ~background["category"].isin(top), "#d0d0d0"))
    for name, mask, color in reversed(groups):  # grey first, underneath
        part = background[mask]
        if part.empty:
            continue
        fig.add_trace(go.Scattergl(
            x=part["x"], y=part["y"], mode="markers", name=plot_text(f"{name} ({len(part):,})", 40),
            marker={"size": 4, "color": color, "opacity": 0.6},
            text=[plot_text(f"{lab} [{cat or '-'}]", 90) for lab, cat in zip(part["label"], part["category"])],
            hovertemplate="%{text}<extra></extra>"))
    if overlay is not None:
        for kind, (symbol, size, color) in MAP_MARKERS.items():
            part = overlay[overlay["kind"] == kind]
            if len(part):
                fig.add_trace(go.Scatter(
                    x=part["x"], y=part["y"], mode="markers", name=MAP_NAMES[kind],
                    marker={"symbol": symbol, "size": size, "color": color, "line": {"width": 2, "color": color}},
                    text=[plot_text(t, 90) for t in part["label"]], hovertemplate="%{text}<extra></extra>"))
    fig.update_xaxes(title="PC 1", zeroline=False)
    fig.update_yaxes(title="PC 2", zeroline=False)
    # Twelve entries beside the map, from the top of the plot down: under it they took the map's height.
    return _layout(fig, title, 640).update_layout(legend={"orientation": "v", "xref": "paper", "x": 1.01,
                                                          "xanchor": "left", "yref": "paper", "y": 1, "yanchor": "top"})


def router_curve(curve: pd.DataFrame, table: pd.DataFrame, threshold: float | None) -> go.Figure:
    """Routed recall over all queries against the threshold, with the fixed policies and the oracle as lines.

    `curve` has ResultsReader.router_curve's columns, `table` router_table's; the curve is in-sample
    (every threshold scored on every query), the table's router row is cross-validated.
    """
    title = "Adaptive router: recall@k against the top-1 cosine threshold"
    overall = table[table["subset"] == "all"]
    if curve.empty or overall.empty:
        return empty(title, "No per-query results of both architectures stored yet.")
    row = overall.iloc[0]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=curve["threshold"], y=curve["recall"], mode="lines", name="routed (in-sample)",
                             line={"color": "#2ca02c", "width": 3},
                             hovertemplate="threshold %{x:.3f}<br>recall %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=curve["threshold"], y=curve["share_to_ptr"], mode="lines", name="share sent to PtR",
                             line={"color": "#7f7f7f", "dash": "dot"},
                             hovertemplate="threshold %{x:.3f}<br>%{y:.0%} to PtR<extra></extra>"), secondary_y=True)
    for name, value, color, dash in (("RtP everywhere", row["rtp_recall"], ARCH_COLORS["rtp"], "dash"),
                                     ("PtR everywhere", row["ptr_recall"], ARCH_COLORS["ptr"], "dash"),
                                     ("per-query oracle", row["oracle_recall"], "#111111", "dot")):
        fig.add_trace(go.Scatter(x=[curve["threshold"].min(), curve["threshold"].max()], y=[value, value],
                                 mode="lines", name=f"{name} ({value:.3f})", line={"color": color, "dash": dash},
                                 hoverinfo="skip"))
    # The cross-validated router is one number, often within a hair of "PtR everywhere": a marker at the
    # fitted threshold, drawn last, stays visible where a second flat line would hide under the first.
    fitted = threshold is not None and math.isfinite(threshold)
    at = threshold if fitted else float(curve["threshold"].median())
    fig.add_trace(go.Scatter(x=[at], y=[row["router_recall"]], mode="markers",
                             name=f"router, cross-validated ({row['router_recall']:.3f})",
                             marker={"symbol": "star", "size": 16, "color": "#2ca02c",
                                     "line": {"width": 1, "color": "#111"}},
                             hovertemplate="cross-validated router<br>recall %{y:.3f}<extra></extra>"))
    if fitted:
        fig.add_vline(x=threshold, line={"color": "#2ca02c", "width": 1})
        fig.add_annotation(x=threshold, y=1.0, yref="paper", yanchor="bottom", showarrow=False,
                           text=f"fitted τ = {threshold:.3f}", font={"color": "#2ca02c"})
    fig.update_xaxes(title_text="RtP top-1 cosine threshold τ (below τ → PtR)")
    fig.update_yaxes(title_text="mean recall", secondary_y=False)
    fig.update_yaxes(title_text="share sent to PtR", tickformat=".0%", range=[0, 1], tickvals=[0, 0.25, 0.5, 0.75, 1],
                     showgrid=False, secondary_y=True)
    return _layout(fig, title, 460, above_plot=LINE_PX if fitted else 0)


def hybrid_bars(table: pd.DataFrame, k: int = 5) -> go.Figure:
    """recall@k by subset for RtP, PtR and the hybrid (ResultsReader.hybrid_table), overall last."""
    title = f"Hybrid discovery vs RtP and PtR: recall@{k} by subset"
    if table.empty:
        return empty(title, "No hybrid runs stored yet: run `python -m core bench hybrid`.")
    subsets = [*subset_order(table.loc[table["subset"] != "all", "subset"]), "all"]
    frame = table.set_index("subset").reindex([s for s in subsets if s in set(table["subset"])])
    fig = go.Figure()
    for arch in (a for a in ARCHS if f"{a}_recall" in frame):
        error = frame.get(f"{arch}_recall_std")  # the hybrid's spread over the main study's runs
        fig.add_trace(go.Bar(x=frame.index, y=frame[f"{arch}_recall"], name=ARCH_NAMES[arch],
                             marker_color=ARCH_COLORS[arch],
                             error_y={"type": "data", "array": error.fillna(0)} if error is not None else None,
                             hovertemplate=f"{ARCH_NAMES[arch]} %{{x}}: %{{y:.3f}}<extra></extra>"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text=f"recall@{k}", rangemode="tozero")
    return _layout(fig, title)


def model_size(table: pd.DataFrame, k: int = 5) -> go.Figure:
    """The model-size answer: per instruction subset, PtR - RtP and hybrid - RtP recall@k for each discovery model
    (core.analysis.model_size), ours with bootstrap 95% intervals, the paper's as open markers with none."""
    title = f"PtR − RtP and hybrid − RtP recall@{k} by discovery model"
    if table.empty:
        return empty(title, "No stored main study yet: run `make results-models`.")
    subsets = [s for s in subset_order(table["subset"])]
    fig = make_subplots(rows=1, cols=len(subsets), shared_yaxes=True, subplot_titles=subsets, horizontal_spacing=0.03)
    models = list(dict.fromkeys(table["model"]))
    for col, subset in enumerate(subsets, 1):
        part = table[table["subset"] == subset].set_index("model").reindex(models)
        for arch, column, symbol in (("ptr", "ptr_minus_rtp", "circle"), ("hybrid", "hybrid_minus_rtp", "diamond")):
            values = part[column].astype(float)
            low, high = part[column.replace("minus_rtp", "low")], part[column.replace("minus_rtp", "high")]
            paper = (part["source"] == "paper").tolist()
            fig.add_trace(go.Scatter(
                x=[plot_text(m, 40) for m in models], y=values, mode="markers", legendgroup=arch,
                name=f"{ARCH_NAMES[arch]} − RtP", showlegend=col == 1,
                marker={"color": ARCH_COLORS[arch], "size": 11, "symbol": [
                    symbol + ("-open" if p else "") for p in paper]},
                error_y={"type": "data", "array": (high.astype(float) - values).tolist(),
                         "arrayminus": (values - low.astype(float)).tolist(), "visible": True},
                customdata=np.stack([part["n"].astype(object), part["parameters"].astype(object)], axis=-1),
                hovertemplate="%{x}<br>" + f"{ARCH_NAMES[arch]} − RtP " + "%{y:.3f}<br>n %{customdata[0]} · "
                              "parameters %{customdata[1]}<extra></extra>"), row=1, col=col)
        fig.add_hline(y=0, line={"color": "#888", "width": 1}, row=1, col=col)
    fig.update_yaxes(title_text=f"recall@{k} difference", row=1, col=1)
    fig.update_xaxes(tickangle=-60)  # steep, so that a long model name stays under its own panel
    return _layout(fig, title, 520, above_plot=LINE_PX)


def registry_gains(table: pd.DataFrame, paper: pd.DataFrame | None = None, k: int = 5) -> go.Figure:
    """PtR - RtP recall@k per registry, single- and multi-tool queries side by side, with paired 95% intervals
    (core.analysis.registry_gains), and the paper's ToolBench figures as their own hatched pair: above zero, PtR
    found more of the gold."""
    title = f"PtR − RtP recall@{k} per registry"  # the subtitle names the system
    if table.empty:
        return empty(title, "No main study stored on any registry for this system: run `make results-registries`.")
    fig = go.Figure()
    for kind, colour in (("single", ARCH_COLORS["rtp"]), ("multi", ARCH_COLORS["ptr"])):
        part = table[table["kind"] == kind]
        fig.add_trace(go.Bar(
            x=part["benchmark"], y=part["mean_diff"], name=f"{kind}-tool queries", legendgroup=kind,
            marker_color=colour, customdata=part[["n", "diff_low", "diff_high", "hybrid_diff"]].to_numpy(),
            error_y={"type": "data", "array": (part["diff_high"] - part["mean_diff"]).tolist(),
                     "arrayminus": (part["mean_diff"] - part["diff_low"]).tolist()},
            hovertemplate="%{x} " + kind + ": PtR − RtP %{y:+.3f} [%{customdata[1]:+.3f}, %{customdata[2]:+.3f}], "
                          "n %{customdata[0]}; hybrid − RtP %{customdata[3]:+.3f}<extra></extra>"))
        if paper is not None and not paper.empty:
            mine = paper[paper["kind"] == kind]
            fig.add_trace(go.Bar(
                x=["paper: ToolBench"] * len(mine), y=mine["mean_diff"].tolist(), name=f"paper, {kind}",
                legendgroup=kind,
                showlegend=False, marker={"color": colour, "pattern": {"shape": "/"}, "opacity": 0.6},
                customdata=mine[["n", "subsets"]].to_numpy(),
                hovertemplate="the paper (Gemini 2.5 Flash, gte-base), " + kind + ": %{y:+.3f} (%{customdata[1]}; "
                              "pooled by count, n %{customdata[0]})<extra></extra>"))
    fig.add_hline(y=0, line={"color": "#888", "width": 1})
    fig.update_layout(barmode="group")
    fig.update_xaxes(type="category")
    fig.update_yaxes(title_text=f"PtR − RtP recall@{k}", zeroline=False)
    return _layout(fig, title)


def coupling_gains(report: dict, k: int = 5) -> go.Figure:
    """PtR - RtP against Intent-Registry Coupling (core.study.coupling): the pooled quantile bins as a line (each
    spanning its couplings, with its 95% interval), and each registry's single and multi cells as markers."""
    title = f"PtR − RtP recall@{k} against Intent-Registry Coupling"  # the subtitle names the system
    bins = report.get("bins") or []
    if not bins:
        return empty(title, "No main study of this system is stored on any registry.")
    fig = go.Figure()
    mid = [(b["low"] + b["high"]) / 2 for b in bins]
    fig.add_trace(go.Scatter(
        x=mid, y=[b["mean_diff"] for b in bins], mode="lines+markers", name="all registries, quintile bins",
        line={"color": "#444"},
        error_x={"type": "data", "array": [b["high"] - m for b, m in zip(bins, mid)],
                 "arrayminus": [m - b["low"] for b, m in zip(bins, mid)], "color": "#aaa", "thickness": 1},
        error_y={"type": "data", "array": [b["diff_high"] - b["mean_diff"] for b in bins],
                 "arrayminus": [b["mean_diff"] - b["diff_low"] for b in bins]},
        customdata=[[b["n"], b["low"], b["high"], b["ptr_wins"], b["rtp_wins"]] for b in bins],
        hovertemplate="coupling %{customdata[1]:.3f}–%{customdata[2]:.3f}: %{y:+.3f}, n %{customdata[0]}, PtR wins "
                      "%{customdata[3]}, RtP wins %{customdata[4]}<extra></extra>"))
    cells = [c for c in report.get("cells", []) if c["kind"] in ("single", "multi")]
    for kind, symbol, colour in (("single", "circle", ARCH_COLORS["rtp"]), ("multi", "diamond", ARCH_COLORS["ptr"])):
        part = [c for c in cells if c["kind"] == kind]
        fig.add_trace(go.Scatter(
            x=[c["coupling_mean"] for c in part], y=[c["diff_mean"] for c in part], mode="markers+text",
            name=f"a registry's {kind}-tool queries", marker={"symbol": symbol, "size": 11, "color": colour},
            text=[c["registry"] for c in part], textposition="top center",
            error_y={"type": "data", "array": [c["diff_high"] - c["diff_mean"] for c in part],
                     "arrayminus": [c["diff_mean"] - c["diff_low"] for c in part]},
            customdata=[[c["n"], c["spearman_rho"]] for c in part],
            hovertemplate="%{text} " + kind + ": mean coupling %{x:.3f}, PtR − RtP %{y:+.3f}, n %{customdata[0]}, "
                          "Spearman rho %{customdata[1]:+.3f}<extra></extra>"))
    fig.add_hline(y=0, line={"color": "#888", "width": 1})
    fig.update_xaxes(title_text="coupling: best cosine between the query and its gold APIs' documents")
    fig.update_yaxes(title_text=f"PtR − RtP recall@{k}", zeroline=False)
    return _layout(fig, title)


RETRIEVER_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")


def retriever_axis(table: pd.DataFrame, paper: pd.DataFrame | None = None) -> go.Figure:
    """PtR - RtP per subset (bars, 95% intervals), one bar per retriever, one panel per discovery system, and the
    paper's two systems under gte-base in panels of their own (open bars: point figures, no interval): whether PtR's
    multi-tool gain holds under each retriever. Subsets are categories, so bars, not lines."""
    title = "PtR − RtP recall@5 per retriever (the same stubs under each)"
    if table.empty:
        return empty(title, "No retriever-axis runs yet: `make embed`, then `python -m core bench retrievers`.")
    both = pd.concat([table, paper]) if paper is not None and len(paper) else table
    models = list(dict.fromkeys(both["model"]))
    retrievers = list(dict.fromkeys(table.sort_values("source")["retriever"]))
    colors = {r: RETRIEVER_COLORS[j % len(RETRIEVER_COLORS)] for j, r in enumerate(retrievers)}
    rows, cols = _grid(len(models), 2)
    # Two model names side by side ran into each other in a narrow chart: each in lines of its panel's width.
    titles = [wrap(plot_text(m, 60), PANEL_TITLE_CHARS) for m in models]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, shared_yaxes=True,
                        vertical_spacing=0.5 / max(rows, 1) if rows > 1 else 0.3)
    shown: set[str] = set()
    for i, model in enumerate(models):
        r, c = divmod(i, cols)
        for retriever in dict.fromkeys(both[both["model"] == model]["retriever"]):
            part = both[(both["model"] == model) & (both["retriever"] == retriever)]
            part = part.set_index("subset").reindex(subset_order(part["subset"])).reset_index()
            name = plot_text(retriever_label(retriever), 60)
            is_paper = bool((part["source"] == "paper").all())
            color = "#7f7f7f" if is_paper else colors[retriever]
            fig.add_trace(go.Bar(
                x=part["subset"], y=part["ptr_minus_rtp"], name=name, legendgroup=retriever,
                showlegend=retriever not in shown,
                marker={"color": "rgba(0,0,0,0)" if is_paper else color, "line": {"color": color, "width": 2}},
                error_y={"type": "data", "symmetric": False, "visible": not is_paper,
                         "array": (part["ptr_high"] - part["ptr_minus_rtp"]).fillna(0.0),
                         "arrayminus": (part["ptr_minus_rtp"] - part["ptr_low"]).fillna(0.0)},
                hovertemplate=name + " %{x}<br>PtR − RtP %{y:+.3f}<extra></extra>"), row=r + 1, col=c + 1)
            shown.add(retriever)
    fig.add_hline(y=0, line={"color": "#999", "width": 1})
    fig.update_yaxes(title_text="PtR − RtP", col=1)
    fig.update_layout(barmode="group")
    return _layout(fig, title, 200 + 300 * rows, above_plot=LINE_PX * max(t.count("<br>") + 1 for t in titles))


def retriever_ksweep(table: pd.DataFrame, model: str) -> go.Figure:
    """Recall vs k per instruction subset for one discovery system: a colour per retriever, PtR solid and RtP dashed,
    so that where PtR's line leaves RtP's reads at every k and under every retriever."""
    title = f"recall vs k per retriever: {plot_text(model, 60)}'s stubs"
    part = table[(table["model"] == model) & table["arch"].isin(PAPER_ARCHS)]
    if part.empty:
        return empty(title, "No retriever-axis k sweep for this system yet: `python -m core bench retrievers`.")
    order = subset_order(part["subset"])
    retrievers = list(dict.fromkeys(part.sort_values("source", kind="stable")["retriever"]))
    fig = make_subplots(rows=1, cols=len(order), subplot_titles=order, shared_yaxes=True)
    for i, subset in enumerate(order):
        for j, retriever in enumerate(retrievers):
            for arch in PAPER_ARCHS:
                line = part[(part["subset"] == subset) & (part["retriever"] == retriever)
                            & (part["arch"] == arch)].sort_values("k")
                if line.empty:
                    continue
                name = f"{ARCH_NAMES[arch]} · {plot_text(retriever_label(retriever), 40)}"
                fig.add_trace(go.Scatter(
                    x=line["k"], y=line["recall"], name=name, legendgroup=name, showlegend=i == 0,
                    mode="lines+markers", line={"color": RETRIEVER_COLORS[j % len(RETRIEVER_COLORS)],
                                                "dash": "solid" if arch == "ptr" else "dash"},
                    hovertemplate=subset + " k=%{x}<br>" + name + " %{y:.3f}<extra></extra>"), row=1, col=i + 1)
    fig.update_xaxes(title="k", type="log", tickvals=[1, 3, 5, 10, 20])
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(title_text="recall", col=1)
    return _layout(fig, title, 480, above_plot=LINE_PX)
