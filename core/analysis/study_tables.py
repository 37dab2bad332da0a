"""The reader's tables that summarise a study per subset: the main comparison, the k sweep, scaling and the
distractors, divergence, the planner's trajectory, stubs, search width, cost, the hybrid and the leaderboard.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from core.analysis import tables as analysis
from core.analysis.provenance import provenance
from core.analysis.query_tables import GOLD_SCORES, STUB_SOURCE, QueryTables
from core.analysis.run_reader import read_cached
from core.analysis.run_selection import same_setup

JACCARD_SOURCE = ("subset", "query_id", "plan_matched")
COST_SOURCE = ("subset", "query_id", "plan_refusal", "stub_prompt_tokens", "stub_output_tokens", "stub_thoughts_tokens",
               "plan_prompt_tokens", "plan_output_tokens", "plan_thoughts_tokens")


class StudyTables(QueryTables):
    """Per-subset summaries of the selected runs (table_schemas declares each table's columns)."""

    @read_cached
    def main_table(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        return analysis.main_table(self._per_run(self._selected("main", backend)), gold)

    @read_cached
    def study_table(self, kind: str, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        """Any study's runs per subset, arch and k: what the report and the Results page show for a study that has
        no table of its own."""
        return analysis.sweep_table(self._per_run(self._selected(kind, backend)), gold, ("subset", "arch", "k"))

    @read_cached
    def retriever_axis(self, gold: str = "api_list") -> pd.DataFrame:
        """PtR - RtP per system, retriever and subset, every stored retriever beside the main study's
        (core.analysis.retriever_axis)."""
        from core.analysis.retriever_axis import axis_runs, axis_table

        runs = axis_runs(self._runs_frame())
        return axis_table(runs, self._rows(runs, ("subset", "query_id", *GOLD_SCORES)), gold)

    @read_cached
    def retriever_axis_ksweep(self, gold: str = "api_list") -> pd.DataFrame:
        """Recall at each k per system, retriever, subset and architecture: the axis's k sweep beside the main
        study's own (core.analysis.retriever_axis)."""
        from core.analysis.retriever_axis import axis_ksweep_runs, axis_ksweep_table

        runs = axis_ksweep_runs(self._runs_frame())
        return axis_ksweep_table(runs, self._rows(runs, ("subset", "query_id", *GOLD_SCORES)), gold)

    @read_cached
    def ksweep(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        return analysis.ksweep_table(self._per_run(self._selected("ksweep", backend)), gold)

    @read_cached
    def scaling(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        runs = self._selected("scaling", backend)
        table = analysis.scaling_table(self._per_run(runs), gold)
        gold_apis = {(s, int(z)): (c or {}).get("gold_apis") for s, z, c in zip(runs["subset"], runs["sub_size"],
                                                                                 runs["config"])}
        table["gold_share"] = [(gold_apis.get((s, z)) or math.nan) / z for s, z in zip(table["subset"], table["size"])]
        return table

    @read_cached
    def distractors(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        """Sizes above the real registry are SYNTHETIC (core.retrieval.synthetic): every view labels them so."""
        runs = self._selected("distractors", backend)
        table = analysis.scaling_table(self._per_run(runs), gold)
        added = {int(z): (c or {}).get("synthetic_distractors") for z, c in zip(runs["sub_size"], runs["config"])}
        table["synthetic_distractors"] = [int(added.get(int(z)) or 0) for z in table["size"]]
        table["registry"] = np.where(table["synthetic_distractors"] > 0, "real + synthetic distractors", "real")
        return table

    @read_cached
    def scaling_notes(self, backend: str | None = None) -> pd.DataFrame:
        runs = self._runs_frame()
        anchor = self._selected("main", backend)
        skipped = runs[(runs["kind"] == "scaling") & (runs["status"] == "skipped")]
        if len(anchor):
            skipped = same_setup(skipped, anchor.iloc[0])
        out = skipped.rename(columns={"sub_size": "size"})[["subset", "size", "note"]].astype({"size": int})
        return out.drop_duplicates().reset_index(drop=True)

    @read_cached
    def divergence(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.divergence(self._per_run(self._selected("main", backend)))

    @read_cached
    def trajectory(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        runs = self._selected("main", backend)
        jaccard = analysis.planner_jaccard(self._rows(runs, JACCARD_SOURCE))
        return analysis.trajectory(self._per_run(runs, gold), jaccard)

    @read_cached
    def stub_stats(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.stub_stats(self._main(backend, STUB_SOURCE))

    @read_cached
    def search_width(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.search_width(self._main(backend, ("subset", "query_id", "k", "search_width")))

    @read_cached
    def planned_counts(self, backend: str | None = None) -> dict[str, int]:
        """Per subset: how many of run 0's PtR rows the planner ran on (fewer than n with a planner sample)."""
        per_run = self._per_run(self._selected("main", backend))
        part = per_run[(per_run["arch"] == "ptr") & (per_run["run_index"] == 0)]
        return {str(subset): int(n) for subset, n in zip(part["subset"], part["n_planned"])}

    @read_cached
    def cost(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.cost(self._main(backend, COST_SOURCE))

    @read_cached
    def routing_savings(self, backend: str | None = None) -> dict:
        """What routing G1 to RtP and the rest to PtR saves (analysis.routing_savings)."""
        return analysis.routing_savings(self.cost(backend))

    @read_cached
    def hybrid_table(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        """Hybrid discovery (beyond the paper) beside RtP and PtR at the main k, per subset and overall."""
        runs, k = self._selected("hybrid", backend), self._main_k(backend)
        if runs.empty or k is None:
            return pd.DataFrame(columns=analysis.HYBRID_COLUMNS)
        return analysis.hybrid_table(self.per_query(None, gold, k, backend),
                                     self._rows(runs, ("subset", "query_id", *GOLD_SCORES)), gold)

    @read_cached
    def leaderboard(self, gold: str = "api_list") -> pd.DataFrame:
        """Every backend's latest study at its main k, with bootstrap 95% intervals over queries. The paper's rows
        are added by core.analysis.report.leaderboard (this reader reads the database only)."""
        parts = []
        for backend in self.backends():
            setup = self.setup(backend) or {}
            k = int(setup.get("k") or 5)
            parts.append(analysis.leaderboard_rows(setup.get("backend_label", backend), provenance(setup, gold),
                                                   self.per_query(None, gold, k, backend),
                                                   self.hybrid_per_query(gold, backend)))
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=analysis.LEADERBOARD_COLUMNS)
