"""The model-size answer: is plan-then-retrieve's gain on multi-tool queries the decomposition or the model?

Per discovery model (the offline heuristic as "no model", each local model, any other stored backend, and the
paper's Gemini 2.5 Flash and gpt-oss-120b) and per instruction subset: PtR - RtP and hybrid - RtP recall@k with
percentile-bootstrap 95% intervals over the paired per-query differences, beside the paper's Table 4 columns
(stubs per query, unique-name rate, top-1 match rate, cosine of correct vs incorrect top-1 matches) and how often
the model copied its prompt's text into a reply (core.analysis.copying). The paper gives point differences only.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from core.agents.prompts import style_of_version
from core.analysis.copying import copy_rate, plan_reply_copy, stub_reply_copy
from core.local_models import LOCAL_MODELS, billions
from core.evaluation.stats import bootstrap_ci

SUBSETS = ("G1_instruction", "G2_instruction", "G3_instruction")
PAPER_SUBSETS = {"G1_instruction": "G1", "G2_instruction": "G2", "G3_instruction": "G3"}
TABLE4 = ("stubs_per_query", "unique_name_rate", "top1_match_rate", "cosine_correct", "cosine_incorrect")
COLUMNS = ["model", "parameters", "source", "subset", "n", "rtp_recall", "ptr_recall", "ptr_minus_rtp", "ptr_low",
           "ptr_high", "hybrid_minus_rtp", "hybrid_low", "hybrid_high", *TABLE4, "stub_copy_rate", "plan_copy_rate",
           "planned_queries"]
NOTE = ("recall@5 on the api_list gold unless the page says otherwise. Intervals: percentile bootstrap (95%) of the "
        "mean paired per-query difference; the paper reports point differences only (no interval, no hybrid). "
        "Copy rate: replies holding four words in a row from the prompt's own text that the query does not hold, "
        "or an example's function name (core.analysis.copying). Plans are of a stratified sample of queries where "
        "planned_queries says so.")
PAPER_MODELS = (("gemini-2.5-flash", "Gemini 2.5 Flash (paper)", "undisclosed"),
                ("gpt-oss-120b", "gpt-oss-120b (paper)", "120B"))


def paired_difference(a: pd.Series, b: pd.Series) -> tuple[float, float, float]:
    """mean(a - b) over the queries both define, with its bootstrap 95% interval."""
    diffs = (a.astype(float) - b.astype(float)).dropna().tolist()
    if not diffs:
        return math.nan, math.nan, math.nan
    low, high = bootstrap_ci(diffs)
    return float(np.mean(diffs)), low, high


def describe(setup: Mapping[str, Any]) -> tuple[str, str]:
    """(model label, parameters) of a stored study's discovery model."""
    if setup.get("llm_backend") == "offline":
        return "offline heuristic (no model)", "none"
    spec = LOCAL_MODELS.get(str(setup.get("llm_model")))
    if spec is not None:
        return spec.label, spec.parameters
    return str(setup.get("backend_label") or setup.get("llm_model")), "?"


def copy_rates(replies: pd.DataFrame, queries: Mapping[tuple[str, int], str], setup: Mapping[str, Any]
               ) -> dict[str, dict[str, Any]]:
    """Per subset: the stub and plan copy rates (CopyRate) of one study's run-0 replies; {} for a study of no prompt
    or with no query texts."""
    stub_style = style_of_version(str(setup.get("discovery_prompt_version") or ""))
    plan_style = style_of_version(str(setup.get("planner_prompt_version") or ""))
    out: dict[str, dict[str, Any]] = {}
    if stub_style is None or not queries:
        return out
    for subset, part in replies.groupby("subset"):
        stubs, plans = [], []
        for row in part.itertuples(index=False):
            query = queries.get((row.subset, int(row.query_id)))
            if query is None:
                continue
            if row.arch == "ptr" and row.stub_names is not None and not row.stub_fallback:
                stubs.append(stub_reply_copy(row.stub_names, row.stub_reasonings, query, stub_style))
            plan = row.plan
            if plan_style and isinstance(plan, dict) and not plan.get("parse_error"):
                plans.append(plan_reply_copy(plan, query, plan_style))
        out[str(subset)] = {"stubs": copy_rate(stubs), "plan": copy_rate(plans)}
    return out


def system_rows(setup: Mapping[str, Any], pq: pd.DataFrame, hybrid_pq: pd.DataFrame, stubs: pd.DataFrame,
                copies: Mapping[str, Mapping[str, Any]], planned: Mapping[str, int]) -> list[dict[str, Any]]:
    """One stored study's rows of the table, one per instruction subset it holds."""
    model, parameters = describe(setup)
    merged = pq.merge(hybrid_pq, on=["subset", "query_id"], how="left") if len(hybrid_pq) else pq.assign(
        hybrid_recall=np.nan)
    rows = []
    for subset in SUBSETS:
        part = merged[merged["subset"] == subset]
        if part.empty:
            continue
        ptr = paired_difference(part["ptr_recall"], part["rtp_recall"])
        hybrid = paired_difference(part["hybrid_recall"], part["rtp_recall"])
        stat = stubs[stubs["subset"] == subset]
        copy = copies.get(subset, {})
        rows.append({"model": model, "parameters": parameters, "source": "this lab", "subset": subset,
                     "n": len(part), "rtp_recall": float(part["rtp_recall"].mean()),
                     "ptr_recall": float(part["ptr_recall"].mean()),
                     "ptr_minus_rtp": ptr[0], "ptr_low": ptr[1], "ptr_high": ptr[2],
                     "hybrid_minus_rtp": hybrid[0], "hybrid_low": hybrid[1], "hybrid_high": hybrid[2],
                     **{c: float(stat[c].iloc[0]) if len(stat) else math.nan for c in TABLE4},
                     "stub_copy_rate": copy["stubs"].rate if copy else None,
                     "plan_copy_rate": copy["plan"].rate if copy else None,
                     "planned_queries": planned.get(subset, 0)})
    return rows


def paper_rows(paper: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The paper's PtR - RtP recall@5 per model and subset, and its Table 4 (Gemini's, reported as ranges or for
    some subsets only: a range's midpoint is shown, a missing figure stays empty)."""
    main = paper.get("main_k5") or {}
    stubs = paper.get("stubs") or {}
    rows = []
    for key, label, parameters in PAPER_MODELS:
        figures = main.get(key) or {}
        for subset, short in PAPER_SUBSETS.items():
            diff, rtp = _paper_difference(figures.get(short) or {})
            if diff is None:
                continue
            table4: dict[str, Any] = {c: math.nan for c in TABLE4}
            if key == "gemini-2.5-flash":
                table4 = {"stubs_per_query": _mid(stubs.get("stubs_per_query")),
                          "unique_name_rate": _mid(stubs.get("unique_name_rate")),
                          "top1_match_rate": (stubs.get("top1_match_rate") or {}).get(short, math.nan),
                          "cosine_correct": ((stubs.get("cosine_top1") or {}).get(short) or {}).get("correct",
                                                                                                     math.nan),
                          "cosine_incorrect": ((stubs.get("cosine_top1") or {}).get(short) or {}).get("incorrect",
                                                                                                       math.nan)}
            rows.append({"model": label, "parameters": parameters, "source": "paper", "subset": subset,
                         "n": (paper.get("setup") or {}).get("subsets", {}).get(short), "rtp_recall": rtp,
                         "ptr_recall": rtp + diff if rtp is not None else math.nan, "ptr_minus_rtp": diff,
                         "ptr_low": math.nan, "ptr_high": math.nan, "hybrid_minus_rtp": math.nan,
                         "hybrid_low": math.nan, "hybrid_high": math.nan, **table4, "stub_copy_rate": None,
                         "plan_copy_rate": None, "planned_queries": None})
    return rows


def _paper_difference(figures: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(PtR - RtP recall, RtP recall) from one model's subset figures, in any of the paper's three shapes."""
    if "rtp" in figures and "ptr" in figures:
        rtp, ptr = _value(figures["rtp"].get("recall")), _value(figures["ptr"].get("recall"))
        return (ptr - rtp if rtp is not None and ptr is not None else None), rtp
    if "ptr_minus_rtp" in figures:
        return _value(figures["ptr_minus_rtp"].get("recall")), None
    if "rtp_minus_ptr" in figures:
        value = _value(figures["rtp_minus_ptr"].get("recall"))
        return (-value if value is not None else None), None
    return None, None


def _value(figure: Any) -> float | None:
    """A paper figure: a number, or [mean, std]."""
    if isinstance(figure, (int, float)):
        return float(figure)
    if isinstance(figure, list) and figure and isinstance(figure[0], (int, float)):
        return float(figure[0])
    return None


def _mid(figure: Any) -> float:
    if isinstance(figure, list) and len(figure) == 2:
        return (float(figure[0]) + float(figure[1])) / 2
    return float(figure) if isinstance(figure, (int, float)) else math.nan


def order_key(row: Mapping[str, Any]) -> tuple:
    """No model first, then the local models by size, other stored backends, the paper's last."""
    parameters = str(row["parameters"])
    size = {"none": 0.0, "undisclosed": 1e6}.get(parameters, billions(parameters))
    return (row["source"] == "paper", 1e5 if size is None else size, str(row["model"]),
            SUBSETS.index(row["subset"]))


def model_size_table(reader: Any, paper: Mapping[str, Any], queries: Mapping[tuple[str, int], str],
                     gold: str = "api_list") -> pd.DataFrame:
    """COLUMNS for every stored study's latest setup and the paper's two models (see the module's docstring).
    `queries` maps (subset, query_id) to the query's text, which the copy rate needs and the store never holds."""
    rows: list[dict[str, Any]] = []
    for system in reader.backends():
        setup = reader.setup(system) or {}
        k = int(setup.get("k") or 5)
        # The copy rates parse every stored reply (1-2 s): only when the query texts they need are given.
        copies = copy_rates(reader.replies(system), queries, setup) if queries else {}
        rows += system_rows(setup, reader.per_query(None, gold, k, system), reader.hybrid_per_query(gold, system),
                            reader.stub_stats(system), copies, reader.planned_counts(system))
    if gold == "api_list":
        rows += paper_rows(paper)
    return pd.DataFrame(sorted(rows, key=order_key), columns=COLUMNS)
