"""PtR - RtP against Intent-Registry Coupling (core.study.coupling keeps the couplings): per registry and kind,
pooled and binned, and the router's threshold carried from ToolBench to the other registries."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from core.evaluation.coupling import coupling_bins
from core.settings import Settings
from core.study.coupling import RetrieverFor, registry_couplings

MEASURE = "best cosine between the query and its api_list gold documents (MiniLM)"


def coupling_rows(settings: Settings, url: str, system: str, k: int, retriever_for: RetrieverFor) -> list[dict]:
    """One row per query of the registry's stored main study of `system` with a coupling: registry, benchmark,
    single/multi, coupling and PtR - RtP recall@k (mean over runs). Couplings are measured only where it is stored."""
    from core.analysis.reader import ResultsReader
    from core.analysis.registry_gains import kind_of

    per_query = ResultsReader(url, registry=settings.registry).per_query(k=k, backend=system)
    if per_query.empty:
        return []
    couplings = registry_couplings(settings, retriever_for)
    out = []
    for row in per_query.itertuples(index=False):
        uid = f"{row.subset}:{row.query_id}"
        if uid in couplings:
            out.append({"registry": settings.registry, "benchmark": settings.registry_declared.benchmark,
                        "kind": kind_of(row.subset), "coupling": couplings[uid], "diff": float(row.recall_diff),
                        "rtp_top1": float(row.rtp_top1), "rtp_recall": float(row.rtp_recall),
                        "ptr_recall": float(row.ptr_recall)})
    return out


def summarise(rows: list[dict]) -> dict:
    """Per registry and kind: n, mean coupling, mean PtR - RtP with a 95% interval, Spearman's rho of coupling
    against PtR - RtP; pooled: the same and the coupling bins."""
    from scipy.stats import spearmanr

    from core.evaluation.stats import bootstrap_ci

    def part(chosen: list[dict]) -> dict:
        diffs = [r["diff"] for r in chosen]
        couplings = [r["coupling"] for r in chosen]
        low, high = bootstrap_ci(diffs)
        varied = len(chosen) > 2 and len(set(diffs)) > 1 and len(set(couplings)) > 1  # rho is undefined otherwise
        rho, p = spearmanr(couplings, diffs) if varied else (float("nan"), float("nan"))
        return {"n": len(chosen), "coupling_mean": round(sum(couplings) / len(chosen), 4),
                "diff_mean": round(sum(diffs) / len(chosen), 4), "diff_low": round(low, 4), "diff_high": round(high, 4),
                "spearman_rho": round(float(rho), 4), "spearman_p": float(p)}

    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["registry"], row["kind"]), []).append(row)
        groups.setdefault((row["registry"], "all"), []).append(row)
    return {"cells": [{"registry": r, "kind": kind, **part(chosen)} for (r, kind), chosen in groups.items()],
            "pooled": part(rows) if rows else None, "router": router_transfer(rows),
            "bins": [asdict(b) for b in coupling_bins([r["coupling"] for r in rows], [r["diff"] for r in rows])]}


def router_transfer(rows: list[dict], source: str = "full") -> list[dict]:
    """The adaptive router's threshold (route to PtR when RtP's top-1 cosine is below it) fitted on `source`'s
    queries, applied to every other registry: its routed recall there beside RtP's, PtR's and a fit of its own."""
    import numpy as np
    import pandas as pd

    from core.analysis.router import fit_threshold, routed_recall

    frame = pd.DataFrame(rows)
    if frame.empty or source not in set(frame["registry"]):
        return []
    fitted = fit_threshold(frame[frame["registry"] == source])
    out = []
    for name, part in frame[frame["registry"] != source].groupby("registry", sort=False):
        top1, rtp, ptr = (part[c].to_numpy(dtype=float) for c in ("rtp_top1", "rtp_recall", "ptr_recall"))
        own = fit_threshold(part)
        out.append({"registry": name, "threshold": round(fitted.threshold, 4), "n": len(part),
                    "routed_recall": round(float(routed_recall(top1, rtp, ptr, fitted.threshold).mean()), 4),
                    "share_to_ptr": round(float(np.mean(top1 < fitted.threshold)), 4),
                    "rtp_recall": round(float(rtp.mean()), 4), "ptr_recall": round(float(ptr.mean()), 4),
                    "own_threshold": round(own.threshold, 4), "own_recall": round(own.recall, 4)})
    return out


def coupling_report(settings: Settings, url: str, system: str, k: int, names: Sequence[str],
                    retriever_for: RetrieverFor) -> dict:
    """The whole answer for `system` over the registries `names`: summarise()'s cells, pooled figures, router
    transfer and bins, with the measure named; empty cells when nothing of `system` is stored."""
    rows = [row for name in names
            for row in coupling_rows(settings.with_(registry=name), url, system, k, retriever_for)]
    return {"system": system, "k": k, "measure": MEASURE, **summarise(rows)}
