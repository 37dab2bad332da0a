"""Which stored runs a table is computed from: the latest complete runs of one setup, one per configuration.

A setup is a registry hash, an embedding model, an LLM backend and model, and prompt versions: runs of two setups
are never mixed in one table. The default setup is that of the study DEFAULT_STUDY_RULE picks
(core.analysis.store_summary); within it, the latest complete run of each configuration counts.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.analysis.store_summary import system_names
from core.data.toolbench import PAPER_SUBSETS
from core.local_models import LOCAL_MODELS, billions

SETUP_FIELDS = ("registry_hash", "embedding_model", "llm_backend", "llm_model", "discovery_prompt_version",
                "planner_prompt_version")
CONFIG_FIELDS = ("kind", "arch", "subset", "k", "run_index", "sub_size", "sub_seed")


def select_runs(runs: pd.DataFrame, kind: str, backend: str | None) -> pd.DataFrame:
    """The latest complete runs of `kind` in the setup of `backend`'s latest main study (with none, of its own
    latest run of `kind`), one per configuration, in id order; the main runs at the main study's k only."""
    complete = runs[runs["status"] == "complete"]
    if backend is None:
        backend = default_study(complete[complete["kind"] == "main"])
    mains = of_system(complete[complete["kind"] == "main"], backend)
    if mains.empty:  # a study that does not build on the main one: its own latest setup
        mains = of_system(complete[complete["kind"] == kind], backend)
    if mains.empty:
        return complete.iloc[0:0]
    anchor = mains.sort_values("id").iloc[-1]
    chosen = same_setup(complete, anchor)
    chosen = chosen[chosen["kind"] == kind]
    if kind == "main":
        chosen = chosen[chosen["k"] == anchor["k"]]
    chosen = chosen.sort_values("id").groupby(list(CONFIG_FIELDS), dropna=False, sort=False).tail(1)
    return chosen.sort_values("id")


def same_setup(runs: pd.DataFrame, anchor: pd.Series) -> pd.DataFrame:
    """The runs of `anchor`'s setup."""
    return runs[np.logical_and.reduce([runs[f] == anchor[f] for f in SETUP_FIELDS])]


def system_keys(runs: pd.DataFrame) -> list[str]:
    """The systems of these runs (see ResultsReader.backends)."""
    return system_names(runs[["llm_backend", "llm_model"]].itertuples(index=False, name=None))


def default_study(mains: pd.DataFrame) -> str | None:
    """DEFAULT_STUDY_RULE's system among these complete main runs; None when there are none (every system then)."""
    if mains.empty:
        return None
    runs = {system: of_system(mains, system) for system in system_keys(mains)}

    def rank(system: str) -> tuple:
        subsets = set(runs[system]["subset"])
        backend, model = runs[system].iloc[-1][["llm_backend", "llm_model"]]
        return (len(subsets & set(PAPER_SUBSETS)), backend != "offline", parameters_in_billions(backend, model),
                len(subsets), runs[system]["id"].max())

    return max(runs, key=rank)


def parameters_in_billions(backend: str, model: str) -> float:
    """A discovery model's size for DEFAULT_STUDY_RULE: the heuristic 0, a local model its declared size, any other
    (a hosted model, whose size is not declared) larger than every model that runs on a laptop."""
    if backend == "offline":
        return 0.0
    spec = LOCAL_MODELS.get(model)
    size = billions(spec.parameters) if spec is not None else None
    return float("inf") if size is None else size


def of_system(runs: pd.DataFrame, system: str | None) -> pd.DataFrame:
    """Runs of one system: None is every run, "backend" every model of that backend (its latest study wins),
    "backend:model" that model only."""
    if system is None:
        return runs
    backend, _, model = system.partition(":")
    mask = runs["llm_backend"] == backend
    return runs[mask & (runs["llm_model"] == model)] if model else runs[mask]


def planner_sample(main: pd.DataFrame) -> dict[str, Any] | None:
    """The planner sample the main runs were planned on ({per_subset, seed, stratified_by, strata}), or None when
    every query was planned."""
    samples = [c.get("planner_sample") for c in main["config"] if isinstance(c, dict) and c.get("planner_sample")]
    return samples[-1] if samples else None
