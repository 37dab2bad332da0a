"""Each query's Intent-Registry Coupling (core.evaluation.coupling) on its registry, set against a system's stored
PtR - RtP: per registry and kind, pooled and binned, and the router's threshold carried from ToolBench to the others.

Couplings need the registry's retriever and one encode of its queries (30-45 s for every registry on 2 cores), so
they are kept in CACHE_DIR/tables under the model, the registry's content and the queries' text and gold: the
dashboard and the CLI compute them once per clone.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from core.data.toolbench import Query
from core.evaluation.coupling import coupling, coupling_bins
from core.retrieval.discovery import Retriever
from core.retrieval.embedding import cache_key, canonical_model_id
from core.settings import Settings

MEASURE = "best cosine between the query and its api_list gold documents (MiniLM)"
RetrieverFor = Callable[[Settings], Retriever]


def coupling_registries() -> list[str]:
    """Every registry but ToolBench's documented subset (its queries are the full registry's, so its couplings
    would count ToolBench twice)."""
    from core.registries import REGISTRY_LIST

    return [r.name for r in REGISTRY_LIST if r.study is None]


def query_couplings(retriever: Retriever, queries: Sequence[Query], gold: str = "api_list") -> dict[str, float]:
    """{query uid: coupling} for the queries with a gold API in the registry (the others have none to measure)."""
    vectors = retriever.encode([q.query for q in queries])
    out = {}
    for query, vector in zip(queries, vectors):
        rows = [row for key in sorted(query.gold(gold)) if (row := retriever.registry.row(key)) is not None]
        value = coupling(vector, retriever.corpus_vectors[rows])
        if value is not None:
            out[query.uid] = value
    return out


def couplings_path(settings: Settings) -> Path:
    """Where this registry's couplings are kept: named for the model, the registry's content and its queries."""
    from core.data.loaders import queries_for, registry_for

    queries = sorted((q.uid, q.query, sorted(q.gold("api_list"))) for q in queries_for(settings))
    digest = hashlib.sha256(json.dumps(queries, ensure_ascii=False).encode()).hexdigest()[:16]
    key = cache_key(canonical_model_id(settings.embedding_model), registry_for(settings))
    return settings.cache_dir / "tables" / f"coupling-{key}-{digest}.json"


def cached_couplings(settings: Settings) -> dict[str, float] | None:
    """The kept couplings of the configured registry; None when none are kept (or the file is unreadable)."""
    try:
        value = json.loads(couplings_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or not all(isinstance(v, float) for v in value.values()):
        return None
    return value


def registry_couplings(settings: Settings, retriever_for: RetrieverFor) -> dict[str, float]:
    """The configured registry's couplings, kept or computed (and kept, when CACHE_DIR can be written)."""
    kept = cached_couplings(settings)
    if kept is not None:
        return kept
    from core.data.loaders import queries_for

    value = query_couplings(retriever_for(settings), list(queries_for(settings)))
    path = couplings_path(settings)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(value), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only or full cache only costs the next caller the encode
        tmp.unlink(missing_ok=True)
    return value


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
    rows = [row for name in names for row in coupling_rows(settings.with_(registry=name), url, system, k, retriever_for)]
    return {"system": system, "k": k, "measure": MEASURE, **summarise(rows)}


def couplings_kept(settings: Settings, names: Sequence[str]) -> bool:
    """Whether every one of these registries' couplings is kept (a page can then draw them at once)."""
    return all(cached_couplings(settings.with_(registry=name)) is not None for name in names)
