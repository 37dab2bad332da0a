"""`python -m core coupling`: PtR - RtP recall against Intent-Registry Coupling, per registry and pooled over
every registry, for one discovery system's stored main study (core.evaluation.coupling says which measure, and why)."""
from __future__ import annotations

import argparse
import json
import sys

from core.backends import BACKENDS
from core.cli.common import retriever_for, validate_results_url
from core.settings import Settings

def cmd_coupling(args: argparse.Namespace, settings: Settings) -> int:
    url = args.db or settings.results_url
    validate_results_url(url, writer=False)
    from core.analysis.coupling_gains import coupling_report
    from core.study.coupling import coupling_registries

    names = args.registries or coupling_registries()
    report = coupling_report(settings, url, args.system, args.k, names,
                             lambda one: retriever_for(one)[0])
    if report["pooled"] is None:
        print(f"error: no stored main study of {args.system} on {', '.join(names)}", file=sys.stderr)
        return 1
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
        print(f"  router fitted on full (threshold {r['threshold']:.3f}) on {r['registry']}: "
              f"routed {r['routed_recall']:.3f} "
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
                   default=None,
                   help="comma list (default: every registry but ToolBench's documented subset)")
    p.add_argument("--system", default="offline",
                   help=f"whose stored study: a backend ({', '.join(BACKENDS)}) or backend:model (default offline)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--db", help="results database URL (default: DATABASE_URL, else data/results.sqlite)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    handlers["coupling"] = cmd_coupling
