"""The reader's tables of the adaptive router on RtP's top-1 cosine (beyond the paper): its cross-validated table,
threshold curve, fit and signal.

core.analysis.router computes them from the stored per-query results.
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from core.analysis import router
from core.analysis.query_tables import QueryTables
from core.analysis.router_fit import RouterFit
from core.analysis.run_reader import read_cached
from core.analysis.table_schemas import ROUTER_CURVE


class RouterTables(QueryTables):
    """The router's tables over the stored per-query results: no retrieval is rerun."""

    @read_cached
    def _router_cv(self, gold: str, k: int, backend: str | None) -> pd.DataFrame:
        return router.cross_validate(self.per_query(None, gold, k, backend))

    @read_cached
    def router_table(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> pd.DataFrame:
        """RtP, PtR, the cross-validated top-1-cosine router and the oracle, per subset and overall."""
        return router.router_table(self._router_cv(gold, k, backend))

    @read_cached
    def router_curve(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> pd.DataFrame:
        """Routed recall (all queries) against the threshold; in-sample, for the chart."""
        pq = self.per_query(None, gold, k, backend).dropna(subset=["rtp_top1"])
        return router.threshold_curve(pq) if len(pq) else pd.DataFrame(columns=ROUTER_CURVE.names)

    @read_cached
    def router_fit(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> RouterFit | None:
        """The threshold fitted on every stored query (what the Inspector applies) with the per-fold thresholds
        behind the cross-validated figures; None without a query both sides answered. No scipy: the Inspector
        reads this on first load."""
        pq = self.per_query(None, gold, k, backend).dropna(subset=["rtp_top1", "rtp_recall", "ptr_recall"])
        if pq.empty:
            return None
        cv = self._router_cv(gold, k, backend)
        return replace(router.fit_threshold(pq), folds=router.FOLDS,
                       fold_thresholds=tuple(sorted(set(cv["threshold"].round(6).tolist()))))

    @read_cached
    def router_signal(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> dict:
        """How much RtP's top-1 cosine says about which side wins (router.top1_signal)."""
        return router.top1_signal(self.per_query(None, gold, k, backend))
