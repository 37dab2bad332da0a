"""The paper's reported figures (data/paper_reference.json), parsed here once for the report and the pages.

The paper names groups G1/G2/G3; this project's data calls them G1_instruction, G2_instruction and
G3_instruction, so every paper point is keyed by our subset names. Values are a number (deterministic:
no std), [mean, std], or null (not reported).
"""
from __future__ import annotations

import json
from pathlib import Path

import math
from typing import Any

import pandas as pd

from core.analysis.tables import LEADERBOARD_COLUMNS
from core.retrieval.archs import PAPER_ARCHS
from core.settings import PROJECT_ROOT

PAPER_SUBSET = {"G1": "G1_instruction", "G2": "G2_instruction", "G3": "G3_instruction"}
PAPER_LLM = "gemini-2.5-flash"  # the paper's model (ours defaults to it too: core.backends)
PAPER_LABEL = "paper (gte-base, Gemini 2.5 Flash)"
PAPER_SYSTEM = "paper: Gemini 2.5 Flash (gte-base)"


def load_paper(path: Path | None = None, root: Path = PROJECT_ROOT) -> dict:
    """The reference figures: `path`, else data/paper_reference.json, else ../shared/paper_reference.json;
    {} when the file is missing or broken (charts and the report then show ours only)."""
    for candidate in ([path] if path is not None else
                      [root / "data" / "paper_reference.json", root.parent / "shared" / "paper_reference.json"]):
        try:
            return json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return {}


def _mean_std(value: object) -> tuple[float | None, float | None]:
    """Paper values are a number (deterministic: no std), [mean, std], or null."""
    if isinstance(value, (int, float)):
        return float(value), None
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    return None, None


def main_points(paper: dict, llm: str = PAPER_LLM) -> pd.DataFrame:
    """[subset, arch, metric, mean, std, p_value] at k=5 for the metrics the paper reports."""
    rows = []
    for group, block in paper.get("main_k5", {}).get(llm, {}).items():
        if group not in PAPER_SUBSET or not isinstance(block, dict):
            continue
        p_values = block.get("p_values", {})
        for arch in PAPER_ARCHS:
            for metric, value in block.get(arch, {}).items():
                mean, std = _mean_std(value)
                if mean is not None:
                    rows.append({"subset": PAPER_SUBSET[group], "arch": arch, "metric": metric, "mean": mean,
                                 "std": std, "p_value": str(p_values.get(metric, ""))})
    return pd.DataFrame(rows, columns=["subset", "arch", "metric", "mean", "std", "p_value"])


def ksweep_points(paper: dict) -> pd.DataFrame:
    """[subset, arch, k, recall] for the k-ablation points the paper states, plus its k=5 recalls."""
    rows = []
    for group, block in paper.get("k_ablation", {}).items():
        if group not in PAPER_SUBSET or not isinstance(block, dict):
            continue
        for key, points in block.items():
            arch = key.split("_")[0]
            for k, value in points.items():
                rows.append({"subset": PAPER_SUBSET[group], "arch": arch, "k": int(k), "recall": float(value)})
    main = main_points(paper)
    for row in main[main["metric"] == "recall"].itertuples():
        rows.append({"subset": row.subset, "arch": row.arch, "k": 5, "recall": row.mean})
    df = pd.DataFrame(rows, columns=["subset", "arch", "k", "recall"])
    return df.drop_duplicates(["subset", "arch", "k"]).sort_values(["subset", "arch", "k"]).reset_index(drop=True)


def scaling_divergence_points(paper: dict) -> pd.DataFrame:
    """[subset, size, divergence]: the paper's G1 tool-selection divergence at 1k and full size."""
    points = paper.get("scaling", {}).get("g1_tool_selection_divergence", {})
    return pd.DataFrame([{"subset": "G1_instruction", "size": int(size), "divergence": float(value)}
                         for size, value in points.items()], columns=["subset", "size", "divergence"])


def wins_table(paper: dict) -> pd.DataFrame:
    """[subset, rtp_wins, ptr_wins] per-query wins at k=5 as the paper counts them."""
    rows = []
    for group, block in paper.get("per_query_wins_k5", {}).items():
        if group in PAPER_SUBSET:
            rows.append({"subset": PAPER_SUBSET[group], "rtp_wins": block.get("rtp"), "ptr_wins": block.get("ptr")})
    return pd.DataFrame(rows, columns=["subset", "rtp_wins", "ptr_wins"])


def stub_cosine_points(paper: dict) -> pd.DataFrame:
    """[subset, correct, cosine]: the paper's mean top-1 stub cosine for correct vs incorrect matches."""
    rows = []
    for group, block in paper.get("stubs", {}).get("cosine_top1", {}).items():
        if group in PAPER_SUBSET:
            for label in ("correct", "incorrect"):
                if label in block:
                    rows.append({"subset": PAPER_SUBSET[group], "correct": label == "correct",
                                 "cosine": float(block[label])})
    return pd.DataFrame(rows, columns=["subset", "correct", "cosine"])


def _groups(paper: dict, llm: str = PAPER_LLM) -> list[tuple[str, dict]]:
    """(our subset name, block) for each group of the paper's main table that is one of ours."""
    return [(PAPER_SUBSET[g], b) for g, b in (paper.get("main_k5", {}).get(llm) or {}).items()
            if g in PAPER_SUBSET and isinstance(b, dict)]


def main_rows(paper: dict) -> list[dict[str, Any]]:
    """The paper's main table (Gemini 2.5 Flash, k=5, 4 runs) as rows shaped like ours.

    Its pass rate is ToolBench's LLM-judged one, so the metric keeps the name "pass_rate": it is not
    our pass_rate_proxy, and the two are never put in one column.
    """
    rows = []
    for subset, group in _groups(paper):
        for metric in ("recall", "precision", "pass_rate"):
            rtp_mean, rtp_std = _mean_std(group.get("rtp", {}).get(metric))
            ptr_mean, ptr_std = _mean_std(group.get("ptr", {}).get(metric))
            rows.append({"subset": subset, "metric": metric, "rtp_mean": rtp_mean, "rtp_std": rtp_std,
                         "ptr_mean": ptr_mean, "ptr_std": ptr_std, "p_value": group.get("p_values", {}).get(metric)})
    return rows


def leaderboard_rows(paper: dict) -> pd.DataFrame:
    """The paper's RtP and PtR at k=5 as leaderboard rows (analysis.tables.LEADERBOARD_COLUMNS)."""
    sizes = (paper.get("setup") or {}).get("subsets") or {}
    names = {ours: theirs for theirs, ours in PAPER_SUBSET.items()}
    rows = []
    for subset, group in _groups(paper):
        for arch in PAPER_ARCHS:
            recall, _ = _mean_std(group.get(arch, {}).get("recall"))
            precision, _ = _mean_std(group.get(arch, {}).get("precision"))
            rows.append({"system": PAPER_SYSTEM, "arch": arch, "subset": subset,
                         "recall": math.nan if recall is None else recall,
                         "precision": math.nan if precision is None else precision, "n": sizes.get(names[subset]),
                         **paper_provenance(paper)})
    return pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)


def paper_provenance(paper: dict) -> dict:
    """The leaderboard's provenance columns for the paper's rows: what it reports of its setup."""
    setup = paper.get("setup") or {}
    return {"llm_backend": "paper (reported)", "llm_model": setup.get("llm", PAPER_LLM),
            "embedding_model": setup.get("embedding_model", "gte-base"),
            "registry": f"ToolBench ({int(setup.get('registry_size') or 0):,} APIs)", "gold": "the paper's",
            "k": setup.get("k", 5), "runs": setup.get("runs"), "commit": "–"}
