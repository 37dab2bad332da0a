"""`python -m core compare --a SYSTEM:ARCH --b SYSTEM:ARCH`: two stored discovery systems query by query, with the
report's paired bootstrap interval of the mean difference (core.analysis.compare)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.common import add_common, k_value, read_store
from core.data.toolbench import DEFAULT_GOLD, GOLD_DEFINITIONS, subset_order
from core.settings import Settings

if TYPE_CHECKING:  # pandas loads with the reader: --help and a refused argument need none
    import pandas as pd

    from core.analysis.compare import Side
    from core.analysis.reader import ResultsReader

EXTREMES = 10  # queries shown at each end of the text output


def cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    compared = read_store(args, settings, lambda reader: comparison_report(reader, args.a, args.b, args.subset,
                                                                           args.gold, args.k))
    if compared is None:
        return 1
    report, rows = compared
    if args.csv:
        from core.analysis.compare import flat_provenance
        from core.files import write_atomic

        provenance = report["provenance"]
        write_atomic(Path(args.csv), rows.assign(**flat_provenance(provenance["a"], provenance["b"])).to_csv(
            index=False))
        print(f"wrote {len(rows)} rows to {args.csv}", file=sys.stderr)
    print(json.dumps(report, ensure_ascii=False) if args.json else render_text(report, rows))
    return 0


def comparison_report(reader: ResultsReader, a_text: str, b_text: str, subset: str | None, gold: str,
                      k: int | None) -> tuple[dict[str, Any], pd.DataFrame]:
    """The --json object and the rows behind it; ValueError in one line for an unknown system, a side with nothing
    stored, or two sides with no query in common."""
    from core.analysis.compare import Side, summarise

    setups = {system: reader.setup(system) for system in reader.backends()}
    a, b = Side.parse(a_text, setups), Side.parse(b_text, setups)
    where = f" on {subset}" if subset else ""
    for side in (a, b):
        if reader.side_recall(side.system, side.arch, gold, k, subset).empty:
            only = " (the hybrid runs at the main k only)" if side.arch == "hybrid" and k is not None else ""
            raise ValueError(f"no stored {side.arch} runs of {side.system}{where} at k={k or setups[side.system]['k']}"
                             f"{only}")
    rows = reader.compare_systems(a, b, subset, gold, k)
    if rows.empty:
        raise ValueError(f"{a.label} and {b.label} have no query in common{where}")
    compared = subset or tuple(subset_order(rows["subset"]))  # a side's runs of other subsets gave no row
    provenance = {name: reader.side_provenance(side.system, side.arch, gold, k, compared)
                  for name, side in (("a", a), ("b", b))}
    report = {"a": side_json(a), "b": side_json(b), "subset": subset, "gold": gold, "k": provenance["a"]["k"],
              "summary": summarise(rows).to_json(), "rows": records(rows), "provenance": provenance}
    return report, rows


def side_json(side: Side) -> dict[str, str]:
    return {"system": side.system, "arch": side.arch, "label": side.label}


def records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """compare_rows' rows as plain JSON records."""
    return [{"subset": str(r.subset), "query_id": int(r.query_id), "a_recall": float(r.a_recall),
             "b_recall": float(r.b_recall), "diff": float(r.diff), "outcome": str(r.outcome)}
            for r in rows.itertuples(index=False)]


def render_text(report: dict[str, Any], rows: pd.DataFrame) -> str:
    """The header, the counts, the means with the interval, and the EXTREMES largest and smallest differences."""
    s = report["summary"]
    lines = [f"a = {report['a']['label']}  vs  b = {report['b']['label']} | subset {report['subset'] or 'all'} | "
             f"gold {report['gold']} | k {report['k']} | n {s['n']}",
             f"a wins {s['a_wins']} / b wins {s['b_wins']} / ties {s['ties']} / both miss {s['both_miss']}",
             f"mean a {s['a_mean']:.3f}  mean b {s['b_mean']:.3f}  diff (a - b) {s['mean_diff']:+.3f} "
             f"[95% CI {s['low']:+.3f}, {s['high']:+.3f}]"]
    top = rows.head(EXTREMES)
    bottom = rows.iloc[max(len(top), len(rows) - EXTREMES):].iloc[::-1]  # never a query in both lists
    for title, part in ((f"top {len(top)} by diff", top), (f"bottom {len(bottom)} by diff", bottom)):
        if part.empty:
            continue
        lines.append(f"{title}:  subset:query_id  a_recall  b_recall  diff")
        lines += [f"  {r.subset}:{r.query_id}  {r.a_recall:.3f}  {r.b_recall:.3f}  {r.diff:+.3f}"
                  for r in part.itertuples(index=False)]
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction, handlers: dict) -> None:
    """Add `compare` to the `python -m core` parser."""
    p = subparsers.add_parser("compare", help="two stored discovery systems query by query",
                              description=__doc__.splitlines()[0] + " A side is a stored system (as `report` names "
                              "them: offline, local:MODEL, ...) and an architecture (rtp, ptr, hybrid), e.g. "
                              "local:qwen2.5-coder-1.5b-instruct-q4_k_m:ptr.")
    p.add_argument("--a", required=True, metavar="SYSTEM:ARCH", help="side a (the difference is a - b)")
    p.add_argument("--b", required=True, metavar="SYSTEM:ARCH", help="side b")
    p.add_argument("--subset", help="one subset (default: every subset both sides hold)")
    p.add_argument("--gold", choices=GOLD_DEFINITIONS, default=DEFAULT_GOLD.name,
                   help="gold definition: api_list (default; the paper's) or relevant (ToolBench's)")
    p.add_argument("--k", type=k_value, default=None,
                   help="APIs kept (default: the systems' main k; another k reads the k sweep, the hybrid has none)")
    p.add_argument("--csv", metavar="FILE", help="also write the rows, each with both sides' provenance, to FILE")
    p.add_argument("--db", help="results database URL (default: DATABASE_URL, else data/results.sqlite)")
    add_common(p)
    handlers["compare"] = cmd_compare
