"""No legend over a title at any width: every figure builder of ui.figures, drawn from small frames shaped like the
reader's, keeps its legend at the bottom of the figure (or beside the plot, from its top down), lets its title push
the plot down, and keeps room above the plot for panel titles and notes that sit there. Checked on each figure's
layout, and in Chromium at the widths a chart gets in a 1,000 and a 1,500 px window, with a subtitle as long as
db_figure's provenance lines. Charts over subsets draw no line from one subset to the next."""
from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import plotly
import plotly.graph_objects as go
import pytest

from core.analysis import paper, router
from core.analysis.model_size import paper_rows
from core.analysis.retriever_axis import paper_axis
from core.analysis.subset_gains import subset_gains
from core.settings import PROJECT_ROOT
from tests.helpers import CHROMIUM_ARGS, chromium
from ui import figures
from ui.chart_text import subtitled

PAPER = paper.load_paper(PROJECT_ROOT / "data" / "paper_reference.json")
SUBSETS = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category", "G3_instruction")
SYSTEMS = ("offline heuristic, not an LLM", "local gemma-3-270m-q4_k_m", "local qwen2.5-coder-0.5b-instruct-q4_k_m",
           "local qwen2.5-coder-1.5b-instruct-q4_k_m")
SUBTITLE = ("local qwen2.5-coder-1.5b-instruct-q4_k_m · qwen2.5-coder-1.5b-instruct-q4_k_m · "
            "sentence-transformers/all-MiniLM-L6-v2 · full (47,038 APIs) · gold api_list · k 5 · commit bb0b6c8811 · "
            "plans: sample of 60 per subset (stratified, seed 0)")
QWEN = "Qwen2.5-Coder-0.5B-Instruct Q4_K_M"  # the longest model label the pages show
WIDTHS = (540, 1040)  # the main column's charts in a 1,000 and a 1,500 px window, measured in Chromium


def board(systems: int) -> pd.DataFrame:
    return pd.DataFrame([{"system": f"local model-{i}", "arch": arch, "subset": subset, "recall": 0.1 + i / 100,
                          "n": 200}
                         for i in range(systems) for arch in ("rtp", "ptr", "hybrid")
                         for subset in ("G1_instruction", "G2_instruction", "G3_instruction")])


def paired(subsets: tuple[str, ...], shift: float) -> pd.DataFrame:
    """ResultsReader.paired_tests' columns that subset_gains reads, both metrics."""
    return pd.DataFrame([{"subset": s, "metric": m, "n": 200, "mean_diff": shift + i / 100,
                          "diff_low": shift + i / 100 - 0.03, "diff_high": shift + i / 100 + 0.03}
                         for i, s in enumerate(subsets) for m in ("recall", "precision")])


def gains() -> pd.DataFrame:
    return subset_gains({system: paired(SUBSETS if i < 3 else SUBSETS[::3], -0.05 + i / 50)
                         for i, system in enumerate(SYSTEMS)}, PAPER)


def main_table() -> pd.DataFrame:
    return pd.DataFrame([{"subset": s, "metric": "recall", "rtp_mean": 0.3 - i / 20, "rtp_std": 0.0,
                          "ptr_mean": 0.25 - i / 40, "ptr_std": 0.01} for i, s in enumerate(SUBSETS[::3])])


def sweep() -> pd.DataFrame:
    return pd.DataFrame([{"subset": s, "arch": a, "k": k, "recall_mean": k / 40, "recall_std": 0.01,
                          "precision_mean": 1 / k, "precision_std": 0.0}
                         for s in SUBSETS[::3] for a in ("rtp", "ptr") for k in (1, 5, 20)])


def scale(synthetic: bool = False) -> pd.DataFrame:
    sizes = (47038, 200_000, 1_000_000) if synthetic else (1000, 10_000, 47038)
    return pd.DataFrame([{"subset": s, "arch": a, "size": size, "recall_mean": 0.5 - j / 10, "recall_std": 0.01,
                          "divergence_not_identical": 0.9, "divergence_disjoint": 0.1,
                          "synthetic_distractors": size - 47038 if synthetic else 0}
                         for s in ("G1_instruction", "G2_instruction") for a in ("rtp", "ptr")
                         for j, size in enumerate(sizes)])


def router_figure() -> go.Figure:
    top1 = np.random.default_rng(0).uniform(0.3, 0.9, 60)
    per_query = pd.DataFrame({"subset": "G1_instruction", "query_id": range(60), "rtp_top1": top1,
                              "rtp_recall": (top1 >= 0.6).astype(float), "ptr_recall": (top1 < 0.6).astype(float)})
    fit = router.fit_threshold(per_query)
    return figures.router_curve(router.threshold_curve(per_query),
                                router.router_table(router.cross_validate(per_query)), fit.threshold)


def model_size_table() -> pd.DataFrame:
    ours = [{"model": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "parameters": "1.5B", "source": "this lab", "subset": s,
             "n": 200, "ptr_minus_rtp": 0.05, "ptr_low": 0.02, "ptr_high": 0.08, "hybrid_minus_rtp": 0.06,
             "hybrid_low": 0.03, "hybrid_high": 0.09} for s in ("G1_instruction", "G2_instruction", "G3_instruction")]
    return pd.DataFrame([*ours, *paper_rows(PAPER)])


def registry_table() -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": b, "kind": kind, "n": 100, "mean_diff": d, "diff_low": d - 0.03,
                          "diff_high": d + 0.03, "hybrid_diff": d + 0.01}
                         for b in ("ToolBench", "Seal-Tools", "LiveMCPBench")
                         for kind, d in (("single", -0.04), ("multi", 0.06))])


def coupling_report() -> dict:
    bins = [{"low": lo, "high": lo + 0.1, "mean_diff": 0.05 - lo / 10, "diff_low": 0.0, "diff_high": 0.1, "n": 50,
             "ptr_wins": 10, "rtp_wins": 8} for lo in (0.4, 0.5, 0.6)]
    cells = [{"registry": r, "kind": kind, "coupling_mean": 0.55, "diff_mean": 0.02, "diff_low": -0.01,
              "diff_high": 0.05, "n": 100, "spearman_rho": -0.1}
             for r in ("toolbench", "sealtools") for kind in ("single", "multi")]
    return {"system": "offline", "bins": bins, "cells": cells}


def retriever_table() -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "retriever": r, "source": "this lab", "subset": s, "n": 200,
                          "ptr_minus_rtp": 0.02, "ptr_low": -0.01, "ptr_high": 0.05}
                         for m in (QWEN, "Qwen2.5-Coder-1.5B-Instruct Q4_K_M")
                         for r in ("all-MiniLM-L6-v2", "bm25") for s in ("G1_instruction", "G2_instruction")])


def retriever_sweep() -> pd.DataFrame:
    return pd.DataFrame([{"model": QWEN, "retriever": r, "source": "this lab", "subset": s, "arch": a, "k": k,
                          "n": 200, "recall": k / 40}
                         for r in ("all-MiniLM-L6-v2", "bm25") for s in ("G1_instruction", "G2_instruction")
                         for a in ("rtp", "ptr") for k in (1, 5, 20)])


# One entry per figure builder of ui.figures (the test below fails when a new one is missing).
SAMPLES: dict[str, Callable[[], go.Figure]] = {
    "empty": lambda: figures.empty("A chart with nothing to show yet", "No results yet: run `python -m core bench`."),
    "crossover": lambda: figures.crossover(main_table(), paper.main_points(PAPER), "recall", 5, SYSTEMS[3],
                                           "relevant"),
    "crossover_backends": lambda: figures.crossover_backends(board(5)),
    "subset_gains": lambda: figures.subset_gains(gains(), gold="relevant"),
    "ksweep": lambda: figures.ksweep(sweep(), paper.ksweep_points(PAPER), system=SYSTEMS[3]),
    "scaling": lambda: figures.scaling(scale(), paper.scaling_divergence_points(PAPER)),
    "distractor_scale": lambda: figures.distractor_scale(scale(), scale(synthetic=True),
                                                         paper.scaling_divergence_points(PAPER)),
    "per_query_scatter": lambda: figures.per_query_scatter(pd.DataFrame({
        "subset": ["G1_instruction"] * 3, "query_id": [1, 2, 3], "rtp_recall": [1.0, 0.0, 0.5],
        "ptr_recall": [0.0, 0.0, 1.0], "outcome": ["rtp_wins", "both_miss", "ptr_wins"]})),
    "token_cost": lambda: figures.token_cost(pd.DataFrame({
        "subset": list(SUBSETS[::3]), "rtp_tokens": [500.0, 480.0], "ptr_discovery_tokens": [300.0, 320.0],
        "ptr_planner_tokens": [510.0, 490.0]})),
    "cosine_hist": lambda: figures.cosine_hist(
        pd.DataFrame({"cosine": [0.8, 0.9, 0.7], "correct": [True, False, True]}), paper.stub_cosine_points(PAPER)),
    "category_bars": lambda: figures.category_bars(pd.DataFrame({"category": ["Data", "Sports"], "apis": [3, 9]})),
    "embedding_map": lambda: figures.embedding_map(
        pd.DataFrame({"x": np.arange(12.0), "y": np.arange(12.0), "label": ["a/b"] * 12,
                      "category": [f"Category {i}" for i in range(12)]}),
        pd.DataFrame({"x": [0.5, 1.5], "y": [0.5, 1.5], "kind": ["query", "stub"], "label": ["q", "s"]})),
    "router_curve": router_figure,
    "hybrid_bars": lambda: figures.hybrid_bars(pd.DataFrame({
        "subset": ["G1_instruction", "G2_instruction", "all"], "rtp_recall": [0.35, 0.13, 0.24],
        "ptr_recall": [0.30, 0.18, 0.24], "hybrid_recall": [0.35, 0.19, 0.27], "hybrid_recall_std": [0.0] * 3})),
    "model_size": lambda: figures.model_size(model_size_table()),
    "registry_gains": lambda: figures.registry_gains(
        registry_table(), pd.DataFrame({"kind": ["single", "multi"], "mean_diff": [-0.083, 0.034],
                                                   "n": [200, 300], "subsets": ["G1 -0.083", "G2 +0.045"]})),
    "coupling_gains": lambda: figures.coupling_gains(coupling_report()),
    "retriever_axis": lambda: figures.retriever_axis(retriever_table(), paper_axis(PAPER)),
    "retriever_ksweep": lambda: figures.retriever_ksweep(retriever_sweep(), QWEN),
}


def sample(name: str) -> go.Figure:
    """The sample figure with db_figure's subtitle, as the pages show it."""
    return subtitled(SAMPLES[name](), SUBTITLE)


def test_every_figure_builder_has_a_sample() -> None:
    builders = {name for name, fn in inspect.getmembers(figures, inspect.isfunction)
                if fn.__module__ == figures.__name__ and not name.startswith("_")
                and inspect.signature(fn).return_annotation == "go.Figure"}
    assert builders == set(SAMPLES)


@pytest.mark.parametrize("name", SAMPLES)
def test_the_legend_sits_where_no_title_reaches_and_the_title_pushes_the_plot_down(name: str) -> None:
    layout = sample(name).layout
    title, legend = layout.title, layout.legend
    assert (title.yref, title.yanchor, title.automargin) == ("container", "top", True)
    assert "<br>" not in title.text  # plotly lifts a two-line title's first line out of a subtitled figure
    at_bottom = (legend.orientation, legend.yref, legend.y, legend.yanchor) == ("h", "container", 0, "bottom")
    beside = (legend.orientation == "v" and legend.xref in (None, "paper") and legend.x >= 1
              and legend.xanchor == "left" and legend.yref in (None, "paper") and legend.y <= 1
              and legend.yanchor == "top")
    assert at_bottom or beside
    # Panel titles and notes right above the plot sit under the title block: it keeps a line free for each line.
    above = [a for a in layout.annotations if a.yanchor == "bottom" and a.y is not None and a.y >= 0.99
             and str(a.yref).endswith(("paper", "domain"))]
    lines = max([str(a.text).count("<br>") + 1 for a in above], default=0)
    assert (title.pad.b or 0) >= figures.LINE_PX * lines


@pytest.mark.parametrize("name", SAMPLES)
def test_no_chart_over_subsets_joins_them_with_a_line(name: str) -> None:
    for trace in sample(name).data:
        if isinstance(trace, go.Scatter) and trace.x is not None and "lines" in (trace.mode or ""):
            assert not set(trace.x) & set(SUBSETS), (name, trace.name)


def test_the_legend_of_every_backend_gets_rows_of_its_own() -> None:
    """One entry per system and architecture: the figure grows by the rows, so the plot keeps its height."""
    small, large = figures.crossover_backends(board(2)), figures.crossover_backends(board(5))
    assert len(large.data) == 15 and large.layout.height > small.layout.height


def test_the_headline_is_bars_of_the_difference_with_intervals_and_the_paper_apart() -> None:
    fig = figures.subset_gains(gains())
    names = [t.name for t in fig.data]
    assert names == [*SYSTEMS, paper.PAPER_SYSTEM] and all(isinstance(t, go.Bar) for t in fig.data)
    last = fig.data[3]  # the 1.5B holds G1_instruction and G2_instruction only: no bar elsewhere
    assert list(last.x) == ["G1_instruction", "G2_instruction"]
    assert list(last.error_y.array) == pytest.approx([0.03, 0.03]) and last.error_y.visible
    theirs = fig.data[-1]
    assert list(theirs.x) == ["G1_instruction", "G2_instruction", "G3_instruction"]
    assert list(theirs.y) == pytest.approx([-0.083, 0.045, 0.012]) and theirs.error_y.visible is False
    assert theirs.marker.pattern.shape == "/" and theirs.marker.color != fig.data[0].marker.color
    assert list(fig.layout.xaxis.categoryarray) == list(SUBSETS)
    assert [s.y0 for s in fig.layout.shapes] == [0]  # the zero line
    assert "above 0: PtR better" in fig.layout.yaxis.title.text
    assert "behaves like api_list" in figures.subset_gains(gains(), gold="relevant").layout.xaxis.title.text


BOXES = """(id) => {
  const gd = document.getElementById(id);
  const boxes = (sel) => [...gd.querySelectorAll(sel)].map(e => e.getBoundingClientRect())
      .filter(r => r.width > 0 && r.height > 0).map(r => [r.left, r.top, r.right, r.bottom]);
  return {title: boxes('.g-gtitle .gtitle'), subtitle: boxes('.g-gtitle .gtitle-subtitle'),
          legend: boxes('.legend .bg'), plot: boxes('.draglayer .nsewdrag'),
          axes: boxes('.xaxislayer-above text, [class^="g-x"][class$="title"] text'),
          notes: boxes('.annotation'), figure: boxes('.main-svg').slice(0, 1)};
}"""


def overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


@pytest.mark.browser
def test_in_chromium_no_legend_meets_a_title_a_note_an_axis_or_the_plot(tmp_path: Path) -> None:
    """Each sample at each width, drawn by the plotly.js the plotly package ships (Streamlit bundles its own, of the
    same major version): the legend's box meets no title, subtitle, note, axis text or plot area, the subtitle and
    the notes meet the title, and the title and subtitle end inside the figure."""
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    divs, calls = [], []
    for name in SAMPLES:
        spec = json.loads(sample(name).to_json())
        for width in WIDTHS:
            divs.append(f'<div id="{name}-{width}" style="width:{width}px"></div>')
            calls.append(f"Plotly.newPlot('{name}-{width}', {json.dumps(spec['data'])}, "
                         f"{json.dumps(spec['layout'])});")
    page_file = tmp_path / "figures.html"
    bundle = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    page_file.write_text(f"<html><head><script src='{bundle.as_uri()}'></script></head><body>{''.join(divs)}"
                         f"<script>{''.join(calls)}</script></body></html>", encoding="utf-8")
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(page_file.as_uri())
        for name in SAMPLES:
            for width in WIDTHS:
                box = page.evaluate(BOXES, f"{name}-{width}")
                [figure] = box["figure"]
                heads = box["title"] + box["subtitle"]
                for legend in box["legend"]:
                    for kind in ("title", "subtitle", "notes", "axes", "plot"):
                        if any(overlap(legend, other) for other in box[kind]):
                            problems.append(f"{name} at {width} px: the legend meets the {kind}")
                if any(overlap(note, head) for note in box["notes"] + box["plot"] for head in heads):
                    problems.append(f"{name} at {width} px: a note or the plot meets the title or subtitle")
                if any(head[1] < figure[1] - 1 or head[2] > figure[2] + 1 for head in heads):
                    problems.append(f"{name} at {width} px: the title or subtitle runs off the figure")
        browser.close()
    assert not problems, problems
