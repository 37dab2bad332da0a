"""The study's report: every table from the results store beside the paper's figures.

`build_report(reader, gold)` returns plain JSON-able data (the CLI prints it, pages may render it);
`render_text(report)` lays it out for a terminal. Our numbers and the paper's are never merged:
each section has an "ours" side and a "paper" side, and the setup differences are stated
(embedding model, LLM or offline heuristic, gold definition, pass-rate proxy vs judged pass rate).
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from core.analysis import model_size, paper as paper_figures
from core.analysis.tables import (DISTRACTOR_NOTE, HYBRID_NOTE, PAIRED_TESTS, PASS_RATE_DEFINITION, PASS_RATE_LABEL,
                                  ptr_gain)
from core.analysis.provenance import plans_text
from core.analysis.reader import ResultsReader
from core.analysis.retriever_axis import NOTE as RETRIEVER_NOTE
from core.analysis.retriever_axis import paper_axis
from core.analysis.router import ROUTER_NOTE
from core.analysis.router_fit import RouterFit
from core.retrieval.archs import declared
from core.data.toolbench import gold_definition, subset_order
from core.study import catalog


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, numpy scalars -> Python, containers recursively."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, float) and math.isinf(value):  # a router threshold: all RtP (-inf) or all PtR (inf)
        return "inf" if value > 0 else "-inf"
    return value


def _fit_fields(fit: RouterFit | None) -> dict[str, Any]:
    """The router's fit under the report's names; none without a fit."""
    if fit is None:
        return {}
    return {"threshold": fit.threshold, "in_sample_recall": fit.recall, "share_to_ptr": fit.share_to_ptr, "n": fit.n,
            "folds": fit.folds, "fold_thresholds": list(fit.fold_thresholds)}


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return _clean(frame.to_dict("records"))


def leaderboard(reader: ResultsReader, gold: str = "api_list", paper: dict[str, Any] | None = None) -> pd.DataFrame:
    """Every backend's latest study and the paper, one row per (system, arch, subset)."""
    paper = paper_figures.load_paper() if paper is None else paper
    return pd.concat([reader.leaderboard(gold), paper_figures.leaderboard_rows(paper)], ignore_index=True)


def leaderboard_wide(board: pd.DataFrame) -> pd.DataFrame:
    """One row per system and architecture, columns "<subset> recall|precision|n" in the study's order."""
    if board.empty:
        return pd.DataFrame(columns=["system", "arch"])
    wide = board.pivot_table(index=["system", "arch"], columns="subset", values=["recall", "precision", "n"],
                             aggfunc="first")
    order = subset_order(board["subset"])
    columns = [(metric, subset) for subset in order for metric in ("recall", "precision", "n")
               if (metric, subset) in wide.columns]
    wide = wide[columns]
    wide.columns = [f"{subset} {metric}" for metric, subset in columns]
    systems = list(dict.fromkeys(board["system"]))
    archs = {a.name: i for i, a in enumerate(declared())}
    wide = wide.reset_index()
    return wide.sort_values(["system", "arch"], key=lambda col: col.map(
        {s: i for i, s in enumerate(systems)} if col.name == "system" else archs)).reset_index(drop=True)


def backends_section(reader: ResultsReader, gold: str, paper: dict[str, Any]) -> dict[str, Any]:
    """Backends side by side: the leaderboard, PtR's G2 gain per system, planner and stub behaviour."""
    board = leaderboard(reader, gold, paper)
    per_backend = {b: (reader.setup(b) or {}).get("backend_label", b) for b in reader.backends()}

    def stacked(read) -> list[dict[str, Any]]:
        frames = [read(b).assign(system=label) for b, label in per_backend.items()]
        return records(pd.concat(frames, ignore_index=True)) if frames else []

    return {"title": "Backends side by side (k=5): each backend's latest study and the paper",
            "ours": records(board), "wide": records(leaderboard_wide(board)),
            "g2_gain": records(ptr_gain(board, "G2_instruction")),
            "trajectory": stacked(lambda b: reader.trajectory(gold, b)),
            "stubs": stacked(lambda b: reader.stub_stats(b)),
            "paper": {"trajectory": paper.get("trajectory"), "stubs": paper.get("stubs")},
            "note": "recall@5 and precision@5 are means over runs (n = queries per mean). A backend whose runs "
                    "cover a sample of the queries says so in its n. PtR minus RtP on G2 per system separates "
                    "the decomposition (the offline heuristic has no model) from the model (gemma-3-270m, "
                    "Gemini): the retrieval half is the same code and index for all."}


def model_size_section(reader: ResultsReader, gold: str, paper: dict[str, Any],
                       queries: Mapping[tuple[str, int], str]) -> dict[str, Any]:
    """The model-size answer (core.analysis.model_size): one row per discovery model and instruction subset."""
    table = model_size.model_size_table(reader, paper, queries, gold)
    return {"title": "Model size: PtR - RtP and hybrid - RtP recall@5 per discovery model, with Table 4's stub "
                     "measures and the copy rate", "ours": records(table), "paper": None, "note": model_size.NOTE}


def registries_section(url: str, gold: str, paper: dict[str, Any]) -> dict[str, Any]:
    """PtR - RtP and hybrid - RtP per registry and kind, for every system stored on any registry, beside the
    paper's ToolBench figures (core.analysis.registry_gains): the store's registries, whichever one is reported."""
    from core.analysis.registry_gains import paper_gains, registry_gains, systems_on_registries

    frames = [registry_gains(url, system, gold=gold).assign(system=system) for system in systems_on_registries(url)]
    ours = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return {"title": "Registries: PtR - RtP and hybrid - RtP recall@5 per registry, single- and multi-tool queries "
                     "(paired, bootstrap 95% intervals)",
            "ours": records(ours), "paper": records(paper_gains(paper)),
            "note": "paper: ToolBench only (Gemini 2.5 Flash, gte-base), G2 and G3 pooled by count, no interval "
                    "reported. `python -m core coupling` sets the same differences against Intent-Registry Coupling."}


# A section from the reader, the gold, the backend (None: the latest main study's), the paper's figures and the
# queries' texts by (subset, query_id), which the store never holds (the copy rate reads them; {} leaves it out).
Section = Callable[[ResultsReader, str, "str | None", dict[str, Any], Mapping[tuple[str, int], str]], dict[str, Any]]

# One builder per report section; core.study.catalog says which study's runs feed each one.
SECTIONS: dict[str, Section] = {
    "main": lambda reader, gold, backend, paper, queries: {
        "title": "Main comparison (k=5): mean ± std over runs",
        "ours": records(reader.main_table(gold, backend)), "paper": paper_figures.main_rows(paper),
        "note": "p: one-sample t of PtR run means vs deterministic RtP (recall, precision), two-sample t "
                "over run means (pass-rate proxy); n/a when runs do not vary. Paper pass rate is "
                "ToolBench's LLM-judged one; ours is the " + PASS_RATE_DEFINITION},
    "paired": lambda reader, gold, backend, paper, queries: {
        "title": "Paired per-query tests (RtP vs PtR)", "ours": records(reader.paired_tests(gold, backend=backend)),
        "paper": None, "note": PAIRED_TESTS + "; the paper reports run-level tests only."},
    "wins": lambda reader, gold, backend, paper, queries: {
        "title": "Per-query outcomes (recall, means over runs)",
        "ours": records(reader.win_counts(gold, backend)), "paper": paper.get("per_query_wins_k5")},
    "ksweep": lambda reader, gold, backend, paper, queries: {
        "title": "k sweep", "ours": records(reader.ksweep(gold, backend)), "paper": paper.get("k_ablation")},
    "scaling": lambda reader, gold, backend, paper, queries: {
        "title": "Registry scaling: recall over seeds, divergence of top-k sets",
        "ours": records(reader.scaling(gold, backend)), "notes": records(reader.scaling_notes(backend)),
        "paper": paper.get("scaling"),
        "note": "every sub-registry holds all gold APIs of the subset (both definitions); gold_share "
                "is their share of it, so small sizes with a high gold_share inflate recall"},
    "distractors": lambda reader, gold, backend, paper, queries: {
        "title": "Distractor scale (synthetic distractors beyond the real registry; beyond the paper)",
        "ours": records(reader.distractors(gold, backend)), "paper": None, "note": DISTRACTOR_NOTE},
    "divergence": lambda reader, gold, backend, paper, queries: {
        "title": "Tool-selection divergence (PtR vs RtP top-k sets, full registry)",
        "ours": records(reader.divergence(backend)), "paper": paper.get("divergence_full_registry")},
    "trajectory": lambda reader, gold, backend, paper, queries: {
        "title": "Planner trajectory", "ours": records(reader.trajectory(gold, backend)),
        "paper": paper.get("trajectory")},
    "stubs": lambda reader, gold, backend, paper, queries: {
        "title": "Stubs", "ours": records(reader.stub_stats(backend)), "paper": paper.get("stubs")},
    "search_width": lambda reader, gold, backend, paper, queries: {
        "title": "Effective search width (APIs scored before the cut to k)",
        "ours": records(reader.search_width(backend)), "paper": None},
    "hybrid": lambda reader, gold, backend, paper, queries: {
        "title": "Hybrid discovery: PtR's stubs + the raw query (beyond the paper)",
        "ours": records(reader.hybrid_table(gold, backend)), "paper": None, "note": HYBRID_NOTE},
    "router": lambda reader, gold, backend, paper, queries: {
        "title": "Adaptive router on RtP's top-1 cosine (beyond the paper; cross-validated recall)",
        "ours": records(reader.router_table(gold, backend=backend)),
        "fit": _clean({**_fit_fields(reader.router_fit(gold, backend=backend)),
                       **reader.router_signal(gold, backend=backend)}),
        "paper": None, "note": ROUTER_NOTE},
    "retrievers": lambda reader, gold, backend, paper, queries: {
        "title": "Retriever axis: PtR - RtP recall@5 per discovery system and retriever, the same stubs under each "
                 "(beyond the paper)", "ours": records(reader.retriever_axis(gold)),
        "ksweep": records(reader.retriever_axis_ksweep(gold)), "paper": records(paper_axis(paper)),
        "note": RETRIEVER_NOTE},
    "backends": lambda reader, gold, backend, paper, queries: backends_section(reader, gold, paper),
    "model_size": lambda reader, gold, backend, paper, queries: model_size_section(reader, gold, paper, queries),
    "cost": lambda reader, gold, backend, paper, queries: {
        "title": "Tokens per query", "ours": records(reader.cost(backend)),
        "routing": _clean(reader.routing_savings(backend)), "paper": paper.get("cost"),
        "note": "tokens as reported when each answer was produced (cache replays keep the original "
                "usage); the offline heuristic uses none"},
}


def _study_section(study: catalog.Study) -> Section:
    """The section of a study with no builder of its own: its runs' recall and precision per subset, arch and k."""
    return lambda reader, gold, backend, paper, queries: {
        "title": study.help + (" (beyond the paper)" if study.beyond_paper else ""),
        "ours": records(reader.study_table(study.name, gold, backend)), "paper": None}


class NoUsableRows(ValueError):
    """Every stored row of the complete runs failed, so there is no mean to report; the message says what to do."""


def build_report(reader: ResultsReader, gold: str = "api_list", backend: str | None = None,
                 paper: dict[str, Any] | None = None,
                 queries: Mapping[tuple[str, int], str] | None = None) -> dict[str, Any]:
    """Every section of every declared study for the latest complete runs, study by study in the catalog's
    order; `paper` defaults to data/paper_reference.json; `queries` (texts by (subset, query_id)) feed the copy
    rate, which is left out without them."""
    gold_note = gold_definition(gold).note  # ValueError naming the definitions
    paper = paper_figures.load_paper() if paper is None else paper
    setup = reader.setup(backend)
    failed = reader.status().get("failed_rows", 0)
    if failed and reader.main_table(gold, backend).empty:
        raise NoUsableRows(f"the complete runs hold no usable row ({failed:,} failed rows, e.g. an LLM outage): "
                           "rerun the study with `python -m core bench <study> --resume` once the LLM answers")
    sections = {name: (SECTIONS[name] if name in SECTIONS else _study_section(study))(reader, gold, backend, paper,
                                                                                     queries or {})
                for study in catalog.STUDIES for name in study.sections}
    return {"gold": gold, "gold_note": gold_note, "pass_rate_note": PASS_RATE_DEFINITION,
            "setup": _clean(setup), "status": _clean(reader.status()), "paper_setup": paper.get("setup"),
            "sections": sections, "registries": registries_section(reader.url, gold, paper)}


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    if not rows:
        return "  (nothing stored)"
    frame = pd.DataFrame(rows)
    if columns:
        frame = frame[[c for c in columns if c in frame.columns]]
    return "\n".join("  " + line for line in frame.map(_fmt).to_string(index=False).splitlines())


def _paper_lines(paper: Any) -> str:
    if not paper:
        return "  paper: not reported"
    return "  paper: " + json.dumps(paper, separators=(", ", ": "))


MODEL_SIZE_TEXT_COLUMNS = ["model", "parameters", "subset", "n", "ptr_minus_rtp", "ptr_low", "ptr_high",
                           "hybrid_minus_rtp", "hybrid_low", "hybrid_high", "stubs_per_query", "unique_name_rate",
                           "top1_match_rate", "cosine_correct", "cosine_incorrect", "stub_copy_rate", "plan_copy_rate",
                           "planned_queries"]


REGISTRY_TEXT_COLUMNS = ["system", "registry", "kind", "n", "rtp_recall", "ptr_recall", "mean_diff", "diff_low",
                         "diff_high", "hybrid_recall", "hybrid_diff", "hybrid_low", "hybrid_high"]


def render_text(report: dict[str, Any]) -> str:
    """The report for a terminal: setup, then each section with ours above the paper's figures."""
    setup = report.get("setup") or {}
    lines = ["Tool Discovery Lab: study report",
             f"setup: registry {setup.get('registry_name')} ({setup.get('registry_size')} APIs), "
             f"embeddings {setup.get('embedding_model')}, {setup.get('backend_label')}, "
             f"{setup.get('runs')} run(s), plans of {plans_text(setup.get('planner_sample'))}, "
             f"commit {str(setup.get('git_commit'))[:12]}",
             f"paper: {(report.get('paper_setup') or {}).get('embedding_model')}, "
             f"{(report.get('paper_setup') or {}).get('llm')}, "
             f"registry {(report.get('paper_setup') or {}).get('registry_size')}",
             report["gold_note"], report["pass_rate_note"], ""]
    sections = report["sections"]
    main = sections["main"]
    ours = [{**row, "metric": PASS_RATE_LABEL if row["metric"] == "pass_rate_proxy" else row["metric"]}
            for row in main["ours"]]
    lines += [f"== {main['title']}", _table(ours, ["subset", "metric", "rtp_mean", "rtp_std", "ptr_mean",
                                                   "ptr_std", "p_value", "test", "better", "n_queries", "runs"]),
              "  paper (Gemini 2.5 Flash, gte-base):",
              _table(main["paper"], ["subset", "metric", "rtp_mean", "rtp_std", "ptr_mean", "ptr_std", "p_value"]),
              f"  {main['note']}", ""]
    for name, section in sections.items():  # the main table above, the backends side by side below
        if name in ("main", "backends", "model_size"):
            continue
        lines += [f"== {section['title']}", _table(section["ours"])]
        if section.get("notes"):
            lines += ["  skipped: " + "; ".join(f"{n['subset']} size {n['size']}: {n['note']}"
                                                for n in section["notes"])]
        if section.get("note"):
            lines += [f"  {section['note']}"]
        if (section.get("fit") or {}).get("threshold") is not None:
            fit = section["fit"]
            lines += [f"  threshold on all queries {_fmt(fit['threshold'])} (sends {_fmt(fit['share_to_ptr'])} to PtR; "
                      f"in-sample recall {_fmt(fit['in_sample_recall'])}); per-fold thresholds "
                      f"{', '.join(_fmt(t) for t in fit['fold_thresholds'])}; Spearman rho of top-1 cosine with "
                      f"PtR - RtP recall {_fmt(fit['spearman_rho'])} (p {_fmt(fit['p'])}, n {fit['n']})"]
        if "routing" in section:
            r = section["routing"]
            lines += [f"  routing by subset, {r['routed_to_rtp']} to RtP and {r['routed_to_ptr']} to PtR, saves "
                      f"{_fmt(r['total_tokens'])} of all tokens and {_fmt(r['discovery_overhead'])} of discovery "
                      "tokens (- = no tokens were used, e.g. the offline heuristic)"]
        lines += [_paper_lines(section.get("paper")), ""]
    backends = sections["backends"]
    lines += [f"== {backends['title']}", _table(backends["wide"]), "  PtR minus RtP recall on G2_instruction:",
              _table(backends["g2_gain"]), "  planner trajectory per backend:", _table(backends["trajectory"]),
              "  stubs per backend:", _table(backends["stubs"]), f"  {backends['note']}", ""]
    sizes = sections["model_size"]
    lines += [f"== {sizes['title']}", _table(sizes["ours"], MODEL_SIZE_TEXT_COLUMNS), f"  {sizes['note']}", ""]
    if "registries" in report:
        across = report["registries"]
        lines += [f"== {across['title']}", _table(across["ours"], REGISTRY_TEXT_COLUMNS),
                  "  paper (ToolBench):", _table(across["paper"], ["kind", "n", "mean_diff", "subsets"]),
                  f"  {across['note']}", ""]
    return "\n".join(lines)
