"""The paper's reported figures (data/paper_reference.json) as tidy DataFrames to overlay on ours.

The paper names groups G1/G2/G3; this project's data calls them G1_instruction, G2_instruction and
G3_instruction (see DESIGN.md), so every paper point is keyed by our subset names.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

PAPER_SUBSET = {"G1": "G1_instruction", "G2": "G2_instruction", "G3": "G3_instruction"}
PAPER_LLM = "gemini-2.5-flash"
PAPER_LABEL = "paper (gte-base, Gemini 2.5 Flash)"


def load_paper(path: Path) -> dict:
    """The reference figures, or {} when the file is missing or broken (charts then show ours only)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
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
        for arch in ("rtp", "ptr"):
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
