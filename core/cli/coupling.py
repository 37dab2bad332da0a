"""`python -m core coupling`: PtR - RtP recall against Intent-Registry Coupling, per registry and pooled over
every registry, for one discovery system's stored main study (core.evaluation.coupling says which measure, and why)."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from core.backends import BACKENDS
from core.cli.common import retriever_for, validate_results_url
from core.registries import REGISTRY_LIST
from core.settings import Settings

def rows_for(settings: Settings, url: str, backend: str, k: int) -> list[dict]:
    """One row per query of the registry's stored main study: registry, benchmark, single/multi, coupling and
    PtR - RtP recall@k (mean over runs)."""
    from core.analysis.reader import ResultsReader
    from core.analysis.registry_gains import kind_of
    from core.data.loaders import queries_for
    from core.study.coupling import query_couplings

    per_query = ResultsReader(url, registry=settings.registry).per_query(k=k, backend=backend)
    if per_query.empty:
        return []
    queries = {q.uid: q for q in queries_for(settings)}
    retriever, _ = retriever_for(settings)
    couplings = query_couplings(retriever, list(queries.values()))
    out = []
    for row in per_query.itertuples(index=False):
        uid = f"{row.subset}:{row.query_id}"
        if uid in couplings and uid in queries:
            out.append({"registry": settings.registry, "benchmark": settings.registry_declared.benchmark,
                        "kind": kind_of(row.subset),
                        "coupling": couplings[uid], "diff": float(row.recall_diff), "rtp_top1": float(row.rtp_top1),
                        "rtp_recall": float(row.rtp_recall), "ptr_recall": float(row.ptr_recall)})
    return out


def summarise(rows: list[dict]) -> dict:
    """Per registry and kind: n, mean coupling, mean PtR - RtP with a 95% interval, Spearman's rho of coupling
    against PtR - RtP; pooled: the same and the coupling bins."""
    from scipy.stats import spearmanr

    from core.evaluation.coupling import coupling_bins
    from core.evaluation.stats import bootstrap_ci

    def part(chosen: list[dict]) -> dict:
        diffs = [r["diff"] for r in chosen]
        couplings = [r["coupling"] for r in chosen]
        low, high = bootstrap_ci(diffs)
        rho, p = spearmanr(couplings, diffs) if len(chosen) > 2 else (float("nan"), float("nan"))
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


def cmd_coupling(args: argparse.Namespace, settings: Settings) -> int:
    url = args.db or settings.results_url
    validate_results_url(url, writer=False)
    rows = [row for name in args.registries for row in rows_for(settings.with_(registry=name), url, args.system, args.k)]
    if not rows:
        print(f"error: no stored main study of {args.system} on {', '.join(args.registries)}", file=sys.stderr)
        return 1
    report = {"system": args.system, "k": args.k, "measure": "best cosine between the query and its api_list gold "
              "documents (MiniLM)", **summarise(rows)}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"PtR - RtP recall@{args.k} against coupling ({report['measure']}); system {args.system}")
    for cell in report["cells"]:
        print(f"  {cell['registry']:>13} {cell['kind']:>6}  n={cell['n']:>4}  coupling {cell['coupling_mean']:.3f}  "
              f"PtR-RtP {cell['diff_mean']:+.3f} [{cell['diff_low']:+.3f}, {cell['diff_high']:+.3f}]  "
              f"rho {cell['spearman_rho']:+.3f} (p {cell['spearman_p']:.2g})")
    pooled = report["pooled"]
    print(f"  pooled: n={pooled['n']}  rho {pooled['spearman_rho']:+.3f} (p {pooled['spearman_p']:.2g})")
    for r in report["router"]:
        print(f"  router fitted on full (threshold {r['threshold']:.3f}) on {r['registry']}: routed {r['routed_recall']:.3f} "
              f"({r['share_to_ptr']:.0%} to PtR) vs RtP {r['rtp_recall']:.3f}, PtR {r['ptr_recall']:.3f}; its own fit "
              f"{r['own_threshold']:.3f} gives {r['own_recall']:.3f} in sample")
    for b in report["bins"]:
        print(f"  coupling {b['low']:.3f}-{b['high']:.3f}  n={b['n']:>4}  PtR-RtP {b['mean_diff']:+.3f} "
              f"[{b['diff_low']:+.3f}, {b['diff_high']:+.3f}]  PtR wins {b['ptr_wins']}, RtP wins {b['rtp_wins']}")
    return 0


def register(subparsers: argparse._SubParsersAction, handlers: dict) -> None:
    p = subparsers.add_parser("coupling", help="PtR - RtP against Intent-Registry Coupling, across registries",
                              description=__doc__.splitlines()[0])
    p.add_argument("--registries", type=lambda text: [r.strip() for r in text.split(",") if r.strip()],
                   default=[r.name for r in REGISTRY_LIST if r.name != "documented"],
                   help="comma list (default: every registry but ToolBench's documented subset)")
    p.add_argument("--system", default="offline",
                   help=f"whose stored study: a backend ({', '.join(BACKENDS)}) or backend:model (default offline)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--db", help="results database URL (default: DATABASE_URL, else data/results.sqlite)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    handlers["coupling"] = cmd_coupling
