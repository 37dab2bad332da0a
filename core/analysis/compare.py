"""Two stored discovery systems compared query by query: which queries one side recalls more of than the other.

A side is a stored system (a key of ResultsReader.backends) with an architecture; any two sides can be set against
each other (a model's PtR against its RtP, one model's PtR against another's). The interval is the report's: the
percentile bootstrap of the mean paired difference over the same queries in the same order, so (X, ptr) against
(X, rtp) reads exactly as the report's PtR - RtP for X (core.analysis.model_size, core.analysis.tables.paired_tests).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.analysis.model_size import describe
from core.analysis.table_schemas import COMPARE_SYSTEMS
from core.analysis.tables import outcome
from core.data.toolbench import subset_order
from core.evaluation.stats import bootstrap_ci
from core.retrieval.archs import PAPER_ARCHS, arch

COMPARABLE_ARCHS = (*PAPER_ARCHS, "hybrid")  # the architectures the store holds per-query recall of
KEY = ["subset", "query_id"]
COLUMNS = COMPARE_SYSTEMS.names
OUTCOMES = ("a_wins", "b_wins", "tie", "both_miss")


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a stored system and an architecture. `system_label` is the study's discovery model
    as the lab names it (model_size.describe); it only shows, so two sides of one system and arch are equal."""

    system: str
    arch: str
    system_label: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.arch not in COMPARABLE_ARCHS:
            raise ValueError(f"arch must be one of {', '.join(COMPARABLE_ARCHS)}, not {self.arch!r}")

    @property
    def label(self) -> str:
        """For tables and headers: "Qwen2.5-Coder-1.5B-Instruct Q4_K_M · PtR"."""
        return f"{self.system_label or self.system} · {arch(self.arch).label}"

    @classmethod
    def of(cls, system: str, arch_name: str, setup: Mapping[str, Any] | None) -> Side:
        """The side of a stored system, labelled from its setup (ResultsReader.setup(system))."""
        return cls(system, arch_name, describe(setup)[0] if setup else "")

    @classmethod
    def parse(cls, text: str, setups: Mapping[str, Mapping[str, Any] | None]) -> Side:
        """"SYSTEM:ARCH", split on the last ':' (a system may hold one: "local:qwen2.5-..."). `setups` maps each
        stored system to its setup; ValueError in one line naming the choices otherwise."""
        system, sep, name = text.rpartition(":")
        if text in setups or not sep or not system:
            raise ValueError(f"a side is SYSTEM:ARCH with ARCH one of {', '.join(COMPARABLE_ARCHS)}, not {text!r}")
        if system not in setups:
            raise ValueError(f"system must be one of {', '.join(setups) or '(none stored)'}, not {system!r}")
        return cls.of(system, name, setups[system])


@dataclass(frozen=True)
class Comparison:
    """What a comparison's rows add up to: the outcome counts, each side's mean and the mean of a - b with its
    bootstrap 95% interval (NaN without rows)."""

    n: int
    a_wins: int
    b_wins: int
    ties: int
    both_miss: int
    a_mean: float
    b_mean: float
    mean_diff: float
    low: float
    high: float

    def to_json(self) -> dict[str, Any]:
        """Its fields, NaN as None: strict JSON."""
        return {name: None if isinstance(value, float) and math.isnan(value) else value
                for name, value in asdict(self).items()}


def in_query_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in the report's order, the study's subsets (subset_order) then query id: the bootstrap resamples by
    position, so only this order gives the report's interval."""
    order = {s: i for i, s in enumerate(subset_order(frame["subset"]))}
    return frame.sort_values(KEY, key=lambda c: c.map(order) if c.name == "subset" else c,
                             kind="stable").reset_index(drop=True)


def compare_rows(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """COLUMNS on the queries both sides define (subset, query_id, recall each), the largest a - b first, then in
    query order."""
    merged = a[[*KEY, "recall"]].merge(b[[*KEY, "recall"]], on=KEY, how="inner", suffixes=("_a", "_b"))
    merged = merged.rename(columns={"recall_a": "a_recall", "recall_b": "b_recall"}).dropna(
        subset=["a_recall", "b_recall"])
    if merged.empty:
        return pd.DataFrame(columns=COLUMNS)
    merged["a_recall"], merged["b_recall"] = merged["a_recall"].astype(float), merged["b_recall"].astype(float)
    merged["diff"] = merged["a_recall"] - merged["b_recall"]
    merged["outcome"] = [outcome(x, y, ("a_wins", "b_wins")) for x, y in zip(merged["a_recall"], merged["b_recall"])]
    order = {s: i for i, s in enumerate(subset_order(merged["subset"]))}
    merged = merged.sort_values(["diff", *KEY], ascending=[False, True, True],
                                key=lambda c: c.map(order) if c.name == "subset" else c, kind="stable")
    return merged[COLUMNS].reset_index(drop=True)


def summarise(rows: pd.DataFrame) -> Comparison:
    """The Comparison of compare_rows' rows, its means and interval over the rows in query order (in_query_order)."""
    ordered = in_query_order(rows)
    a, b, diff = (ordered[c].to_numpy(dtype=float) for c in ("a_recall", "b_recall", "diff"))
    counts = ordered["outcome"].value_counts()
    low, high = bootstrap_ci(diff)
    return Comparison(len(ordered), *(int(counts.get(o, 0)) for o in OUTCOMES), _mean(a), _mean(b), _mean(diff),
                      low, high)


def _mean(values: np.ndarray) -> float:
    """numpy's mean, as paired_tests takes it (the same summation, to the last bit); NaN of nothing."""
    return float(values.mean()) if len(values) else math.nan


def flat_provenance(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Both sides' provenance as one flat record, a_ and b_ before each field and lists joined by spaces: the columns
    every row of an export carries, as the pages' downloads carry theirs (ui.tables.with_provenance)."""
    def flat(value: Any) -> Any:
        return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else value

    return {f"{side}_{name}": flat(value) for side, fields in (("a", a), ("b", b)) for name, value in fields.items()}
