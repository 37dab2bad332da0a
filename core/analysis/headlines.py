"""Sentences that state a finding, computed from the numbers they describe, so that no page's prose claims what its
chart does not show. Each names the study (system) it is about and gives the differences it rests on."""
from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from core.retrieval.archs import PAPER_ARCHS

SINGLE, MULTI = ("G1_instruction",), ("G2_instruction", "G3_instruction")
SHORT = {"G1_instruction": "G1", "G2_instruction": "G2", "G3_instruction": "G3"}


def differences(board: pd.DataFrame, system: str, metric: str = "recall") -> dict[str, float]:
    """PtR - RtP `metric` per instruction subset for one system of a leaderboard (core.analysis.report)."""
    part = board[(board["system"] == system) & board["arch"].isin(PAPER_ARCHS)]
    wide = part.pivot_table(index="subset", columns="arch", values=metric, aggfunc="first")
    if not set(PAPER_ARCHS) <= set(wide.columns):
        return {}
    return _subset_differences(wide, "rtp", "ptr")


def main_differences(main: pd.DataFrame, metric: str = "recall") -> dict[str, float]:
    """PtR - RtP `metric` per instruction subset from one study's main table (ResultsReader.main_table)."""
    return _subset_differences(main[main["metric"] == metric].set_index("subset"), "rtp_mean", "ptr_mean")


def _subset_differences(by_subset: pd.DataFrame, rtp: str, ptr: str) -> dict[str, float]:
    """ptr - rtp per instruction subset of a frame indexed by subset, G1 first; undefined differences left out."""
    diffs = {s: float(by_subset.at[s, ptr] - by_subset.at[s, rtp]) for s in (*SINGLE, *MULTI) if s in by_subset.index}
    return {s: d for s, d in diffs.items() if not math.isnan(d)}


def crossover_verdict(diffs: Mapping[str, float], metric: str = "recall", k: int = 5) -> str:
    """What PtR - RtP per subset says of the paper's crossover (RtP better on single-tool G1, PtR on multi-tool
    G2 and G3), with the numbers: "crossover", "partial crossover", "PtR trails everywhere", and so on; a study
    that holds only one side of it (G1 alone, or G2/G3 alone) is said to, and claims no crossover either way."""
    if not diffs:
        return "no main study of the instruction subsets"
    numbers = ", ".join(f"{SHORT[s]} {d:+.3f}" for s, d in diffs.items())
    single = [diffs[s] for s in SINGLE if s in diffs]
    multi = [diffs[s] for s in MULTI if s in diffs]
    if not single or not multi:  # a study under way: one side of the crossover is not stored yet
        side = ("trails" if all(d < 0 for d in diffs.values()) else "leads" if all(d > 0 for d in diffs.values())
                else "is mixed against")
        finding = (f"only {' and '.join(SHORT[s] for s in diffs)} stored so far, where PtR {side} RtP: the crossover "
                   "needs single-tool G1 and a multi-tool subset")
    elif all(d < 0 for d in diffs.values()):
        finding = "PtR trails RtP on every subset: no crossover"
    elif all(d > 0 for d in diffs.values()):
        finding = "PtR leads RtP on every subset: no crossover"
    elif all(d < 0 for d in single) and all(d > 0 for d in multi):
        stored = " and ".join(SHORT[s] for s in MULTI if s in diffs)  # only the subsets it holds (G3 may be to come)
        finding = f"RtP leads on single-tool G1 and PtR on multi-tool {stored}: the paper's crossover"
    elif all(d < 0 for d in single) and any(d > 0 for d in multi):
        finding = "RtP leads on G1 and PtR on part of the multi-tool subsets: a partial crossover"
    else:
        finding = "no crossover of the paper's kind"
    return f"{finding} (PtR − RtP {metric}@{k}: {numbers})"


def crossover_lines(board: pd.DataFrame, metric: str = "recall") -> list[tuple[str, str]]:
    """(system, verdict) for every system of a leaderboard, in its order: the Overview's headline."""
    return [(system, crossover_verdict(differences(board, system, metric), metric))
            for system in dict.fromkeys(board["system"])] if not board.empty else []
