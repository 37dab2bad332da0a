"""PtR - RtP recall per subset for every stored discovery system, with its paired bootstrap 95% interval, beside the
paper's Gemini 2.5 Flash: the table of the Overview's headline chart.

A difference, not two levels, because the study's question is which side wins where: a reader sees the sign per
subset at once, and the interval says whether it could be noise. Positive means PtR found more of the gold.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from core.analysis.model_size import PAPER_MODELS, paper_rows
from core.analysis.paper import PAPER_LLM, PAPER_SYSTEM
from core.data.toolbench import subset_order

COLUMNS = ["system", "source", "subset", "n", "diff", "low", "high"]
PAPER_MODEL = next(label for key, label, _ in PAPER_MODELS if key == PAPER_LLM)


def subset_gains(paired: Mapping[str, pd.DataFrame], reference: Mapping[str, Any]) -> pd.DataFrame:
    """COLUMNS: one row per system and subset it holds, subsets in the study's order, the systems in `paired`'s
    order and then the paper.

    `paired` maps a system's label to its ResultsReader.paired_tests frame, whose recall rows carry the mean paired
    per-query difference and its bootstrap interval, so no second bootstrap is drawn here. `reference` is the
    paper's figures (core.analysis.paper.load_paper): its PtR minus RtP mean recall, with no interval, since it
    reports no per-query values.
    """
    rows = [{"system": system, "source": "this lab", "subset": row.subset, "n": row.n, "diff": row.mean_diff,
             "low": row.diff_low, "high": row.diff_high}
            for system, tests in paired.items() for row in tests[tests["metric"] == "recall"].itertuples()]
    rows += [{"system": PAPER_SYSTEM, "source": "paper", "subset": row["subset"], "n": row["n"],
              "diff": row["ptr_minus_rtp"], "low": math.nan, "high": math.nan}
             for row in paper_rows(reference) if row["model"] == PAPER_MODEL]
    table = pd.DataFrame(rows, columns=COLUMNS).dropna(subset=["diff"])
    systems = {s: i for i, s in enumerate(dict.fromkeys(table["system"]))}
    subsets = {s: i for i, s in enumerate(subset_order(table["subset"]))}
    ranks = pd.DataFrame({"system": table["system"].map(systems), "subset": table["subset"].map(subsets)})
    return table.loc[ranks.sort_values(["system", "subset"]).index].reset_index(drop=True)
